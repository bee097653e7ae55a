import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * JSON logs. Bodies and signatures are never passed to the logger; the redact paths are a second line of
 * defence for a header object that reaches a log call by mistake.
 *
 * Written asynchronously: lines that accumulate while a write is in flight go out together, instead of one
 * blocking write per delivery on the hot path (measured: a synchronous line per delivery was about a tenth
 * of the gateway's CPU under load). pino flushes what is pending when the process exits.
 */
export function createLogger(level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino(
    {
      level,
      base: { service: 'oncehook' },
      redact: {
        paths: ['headers.authorization', 'headers.cookie', '*.secrets', 'secrets', 'token', 'adminToken'],
        censor: '[redacted]',
      },
    },
    pino.destination({ dest: 1, sync: false }),
  );
}
