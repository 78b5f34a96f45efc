/** How GitHub reads a Markdown file: its prose outside code blocks and the anchors its headings make. */

/** The lines outside fenced code blocks (a fenced line becomes ''), so links in examples are not links. */
export function proseLines(text: string): string[] {
  let fence: string | null = null;
  return text.split('\n').map((line) => {
    const m = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (fence) {
      if (m && m[1][0] === fence[0] && m[1].length >= fence.length && line.trim() === m[1]) fence = null;
      return '';
    }
    if (m) {
      fence = m[1];
      return '';
    }
    return line;
  });
}

/** GitHub's anchor for a heading: lowercase, punctuation dropped except - and _, each space a -. */
export function githubSlug(heading: string): string {
  const text = heading
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/[`*]/g, '');
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a Markdown file offers: its headings' slugs (repeats get -1, -2, ...) and explicit <a id|name>. */
export function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  // As github-slugger numbers repeats: the count per original slug, and never a slug already taken.
  const occurrences = new Map<string, number>();
  const add = (heading: string) => {
    const base = githubSlug(heading);
    let slug = base;
    while (occurrences.has(slug)) {
      occurrences.set(base, occurrences.get(base)! + 1);
      slug = `${base}-${occurrences.get(base)}`;
    }
    occurrences.set(slug, 0);
    anchors.add(slug);
  };
  const lines = proseLines(text);
  for (const [i, line] of lines.entries()) {
    const atx = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/.exec(line);
    if (atx) add(atx[1]);
    else if (/^ {0,3}(=+|-+)[ \t]*$/.test(line) && i > 0 && lines[i - 1].trim() && !/^ {0,3}([#>|*+-]|\d+\.)/.test(lines[i - 1])) add(lines[i - 1]);
    for (const m of line.matchAll(/<a\s[^>]*\b(?:id|name)\s*=\s*["']([^"']+)["']/gi)) anchors.add(m[1]);
  }
  return anchors;
}
