/** Byte counts as people read them. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/**
 * One status line on stderr. On a terminal it is redrawn in place, at most every 100 ms; elsewhere
 * (a log, a test) only the final line is written, so logs stay readable.
 */
export class Progress {
  private lastDraw = 0;
  private readonly live = process.stderr.isTTY === true;

  constructor(private readonly render: () => string) {}

  update(): void {
    if (!this.live) return;
    const now = Date.now();
    if (now - this.lastDraw < 100) return;
    this.lastDraw = now;
    process.stderr.write(`\r\x1b[2K${this.render()}`);
  }

  done(suffix = ''): void {
    process.stderr.write(`${this.live ? '\r\x1b[2K' : ''}${this.render()}${suffix}\n`);
  }
}
