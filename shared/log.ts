export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

// Field names whose values never reach a log line.
const SECRET_FIELDS = /authorization|api_key|new_key|secret|token|password/i;

function redact(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(fields).map(([k, v]) => [k, SECRET_FIELDS.test(k) ? '[redacted]' : v]),
  );
}

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** One JSON line per event, on the console (which Workers and Node both collect). */
export function createLogger(level: LogLevel): Logger {
  const emit = (at: Exclude<LogLevel, 'silent'>) => (msg: string, fields: Record<string, unknown> = {}) => {
    if (order[at] < order[level]) return;
    const line = JSON.stringify({ level: at, time: new Date().toISOString(), msg, ...redact(fields) });
    if (at === 'error') console.error(line);
    else if (at === 'warn') console.warn(line);
    else console.log(line);
  };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}
