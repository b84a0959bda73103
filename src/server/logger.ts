// Structured logs: one JSON object per line on stderr, with the member and
// cluster on every line and messages worded the way operators search for them.
// Our own writer rather than a logging library: a member logs a few lines an
// hour when healthy, and a library (with its transports and worker machinery)
// cost an idle member more memory than everything it wrote.

const LEVELS = { debug: 20, info: 30, warn: 40, error: 50, silent: Infinity } as const;
export type LogLevel = keyof typeof LEVELS;
/** The levels --log-level takes. */
export const LOG_LEVELS = Object.keys(LEVELS) as readonly LogLevel[];

type Fields = Record<string, unknown>;

export interface Logger {
  /** A logger that adds `fields` to every line (after the parent's). */
  child(fields: Fields): Logger;
  debug(fieldsOrMsg: Fields | string, msg?: string): void;
  info(fieldsOrMsg: Fields | string, msg?: string): void;
  warn(fieldsOrMsg: Fields | string, msg?: string): void;
  error(fieldsOrMsg: Fields | string, msg?: string): void;
}

/** 64-bit IDs are bigints in places; a log line gives them as decimal strings. */
const jsonValue = (_key: string, v: unknown): unknown => (typeof v === 'bigint' ? v.toString() : v);

class LineLogger implements Logger {
  constructor(
    private readonly threshold: number,
    /** The fields after level and time, already as JSON text with a leading comma (or ''). */
    private readonly base: string,
    private readonly write: (line: string) => void,
  ) {}

  child(fields: Fields): Logger {
    return new LineLogger(this.threshold, this.base + fieldsJson(fields), this.write);
  }

  debug(a: Fields | string, msg?: string): void {
    this.line('debug', a, msg);
  }
  info(a: Fields | string, msg?: string): void {
    this.line('info', a, msg);
  }
  warn(a: Fields | string, msg?: string): void {
    this.line('warn', a, msg);
  }
  error(a: Fields | string, msg?: string): void {
    this.line('error', a, msg);
  }

  private line(level: Exclude<LogLevel, 'silent'>, a: Fields | string, msg?: string): void {
    if (LEVELS[level] < this.threshold) return;
    const [fields, text] = typeof a === 'string' ? [{}, a] : [a, msg];
    const tail = text === undefined ? '' : `,"msg":${JSON.stringify(text)}`;
    this.write(`{"level":"${level}","time":"${new Date().toISOString()}"${this.base}${fieldsJson(fields)}${tail}}\n`);
  }
}

/** `,"k":v,...` for the fields whose values JSON can hold. */
function fieldsJson(fields: Fields): string {
  const body = JSON.stringify(fields, jsonValue).slice(1, -1);
  return body ? `,${body}` : '';
}

function isLevel(s: string): s is LogLevel {
  return Object.hasOwn(LEVELS, s);
}

/**
 * The member's logger. `level` (--log-level): debug, info, warn, error
 * or silent. Lines go to stderr, which Node writes synchronously for files and
 * pipes on Linux: a line logged before an exit is not lost.
 */
export function createLogger(
  fields: { member?: string; cluster?: string; name?: string },
  level: string = 'info',
  write: (line: string) => void = (line) => process.stderr.write(line),
): Logger {
  if (!isLevel(level)) {
    throw new Error(`unknown log level '${level}': use ${LOG_LEVELS.join(', ')}`);
  }
  return new LineLogger(LEVELS[level], fieldsJson(fields), write);
}
