/**
 * Postgres' `english` text-search stopwords (Snowball's list): the words to_tsvector('english')
 * drops, so the keyword side of a search never sees them either.
 */
const ENGLISH_STOPWORDS = new Set(
  `i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself it its itself
   they them their theirs themselves what which who whom this that these those am is are was were be been being have has had having
   do does did doing a an the and but if or because as until while of at by for with about against between into through during
   before after above below to from up down in out on off over under again further then once here there when where why how all any
   both each few more most other some such no nor not only own same so than too very s t can will just don should now`.split(/\s+/),
);

/** A word is dropped when it, or every part of it between apostrophes ("what's", "don't"), is a stopword. */
const isStopword = (word: string) => {
  const w = word.toLowerCase();
  return ENGLISH_STOPWORDS.has(w) || w.split(/['’]/).every((part) => !part || ENGLISH_STOPWORDS.has(part));
};

/**
 * The query's words without its stopwords, in order ("When did Caroline go to the support group?"
 * becomes "Caroline go support group"); the text itself when every word is one.
 */
export function stripStopwords(text: string): string {
  const words = text.match(/[\p{L}\p{N}]+(?:['’][\p{L}]+)*/gu) ?? [];
  const kept = words.filter((w) => !isStopword(w));
  return kept.length ? kept.join(' ') : text;
}
