import pc from 'picocolors';

type Colors = ReturnType<typeof pc.createColors>;

/** Colours only for a terminal, never with --json, NO_COLOR or TERM=dumb. */
function colorsFor(stream: NodeJS.WriteStream, json: boolean): Colors {
  const env = process.env;
  const enabled = !json && stream.isTTY === true && !('NO_COLOR' in env) && env.TERM !== 'dumb';
  return pc.createColors(enabled);
}

/** `sk_live_…9f2c`: enough to tell keys apart, never enough to use one. */
export function maskKey(key: string): string {
  const prefix = /^[a-z]+_/i.exec(key)?.[0] ?? '';
  return `${prefix}…${key.slice(-4)}`;
}

export interface Column<Row> {
  header: string;
  value: (row: Row) => string | number | boolean | null | undefined;
  /** Cut longer cells to this many characters (the last column is never padded). */
  max?: number;
}

/**
 * Where a command's results go. With --json, stdout gets exactly the API's body and nothing else;
 * otherwise people get tables and sentences on stdout, and notes and progress on stderr.
 */
export class Output {
  readonly json: boolean;
  readonly out: Colors;
  readonly err: Colors;
  private readonly secrets: string[] = [];

  constructor(json: boolean) {
    this.json = json;
    this.out = colorsFor(process.stdout, json);
    this.err = colorsFor(process.stderr, json);
  }

  /** Every later message has this value replaced by its masked form. */
  hide(secret: string | undefined): void {
    if (secret) this.secrets.push(secret);
  }

  redact(text: string): string {
    let result = text;
    for (const secret of this.secrets) result = result.split(secret).join(maskKey(secret));
    return result;
  }

  /** The API's body as it came, for --json. */
  body(value: unknown): void {
    process.stdout.write(`${this.redact(JSON.stringify(value, null, 2))}\n`);
  }

  /** A line for people on stdout (skipped with --json: the body is the whole output there). */
  line(text = ''): void {
    if (!this.json) process.stdout.write(`${this.redact(text)}\n`);
  }

  /** A note on stderr; never mixes with machine output. */
  note(text: string): void {
    process.stderr.write(`${this.redact(text)}\n`);
  }

  /** `body` for --json, else `human()`. */
  result(body: unknown, human: () => void): void {
    if (this.json) this.body(body);
    else human();
  }

  table<Row>(rows: readonly Row[], columns: readonly Column<Row>[]): void {
    if (rows.length === 0) return;
    const cells = rows.map((row) => columns.map((c) => cell(c.value(row), c.max)));
    const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((r) => r[i].length)));
    const render = (values: string[]) =>
      values
        .map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i])))
        .join('  ')
        .trimEnd();
    this.line(this.out.bold(render(columns.map((c) => c.header))));
    for (const row of cells) this.line(render(row));
  }
}

function cell(value: string | number | boolean | null | undefined, max?: number): string {
  const text = value === null || value === undefined ? '' : String(value).replace(/\s+/g, ' ');
  return max && text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
