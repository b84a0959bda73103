// Structured logs: one JSON object per line on stderr, with the member and
// cluster on every line and messages worded the way operators search for them.
import pino from 'pino';

export type Logger = pino.Logger;

export function createLogger(fields: { member?: string; cluster?: string; name?: string }, level = process.env.LIFEBOAT_LOG_LEVEL ?? 'info'): Logger {
  return pino(
    {
      level,
      base: { ...fields },
      messageKey: 'msg',
      timestamp: () => `,"time":"${new Date().toISOString()}"`,
      formatters: { level: (label) => ({ level: label }) },
    },
    pino.destination({ dest: 2, sync: true }),
  );
}
