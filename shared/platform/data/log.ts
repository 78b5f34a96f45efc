export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

// Field names whose values never reach a log line.
const SECRET_FIELDS = /authorization|api_key|new_key|secret|token|password/i;
// Keys of the line itself; a field with one of these names is written as `field_<name>`.
const RESERVED = new Set(['level', 'time', 'msg']);

function renameReserved(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).map(([k, v]) => [RESERVED.has(k) ? `field_${k}` : k, v]));
}

/**
 * JSON text of one log line, whatever the values hold: secret-named fields redacted at any depth, bigints
 * as strings, cycles and Errors made printable, and the characters JSON leaves raw but some log
 * readers take as line breaks (U+0085, U+2028, U+2029) escaped, so a value can never start a line.
 */
export function logLine(entry: Record<string, unknown>): string {
  const seen = new WeakSet<object>();
  const text = JSON.stringify(entry, (key, value: unknown) => {
    if (key && SECRET_FIELDS.test(key) && value !== undefined && value !== null) return '[redacted]';
    if (typeof value === 'bigint') return value.toString();
    if (value instanceof Error) return { name: value.name, message: value.message };
    if (typeof value === 'object' && value !== null) {
      if (seen.has(value)) return '[circular]';
      seen.add(value);
    }
    return value;
  });
  return text.replace(/[\u0085\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** One JSON line per event, on the console (which Workers and Node both collect). */
export function createLogger(level: LogLevel): Logger {
  const emit =
    (at: Exclude<LogLevel, 'silent'>) =>
    (msg: string, fields: Record<string, unknown> = {}) => {
      if (order[at] < order[level]) return;
      const line = logLine({ level: at, time: new Date().toISOString(), msg, ...renameReserved(fields) });
      if (at === 'error') console.error(line);
      else if (at === 'warn') console.warn(line);
      else console.log(line);
    };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}
