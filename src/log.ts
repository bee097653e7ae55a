import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * JSON logs. Bodies and signatures are never passed to the logger; the redact paths are a second line of
 * defence for a header object that reaches a log call by mistake.
 *
 * Written asynchronously and in blocks: lines gather until 4 KiB or a tenth of a second has passed, then go
 * out in one write, instead of one write per delivery on the hot path: a synchronous line per delivery was
 * about a tenth of the gateway's CPU under ingest load, and blocks cost a third of what a write every line or
 * two did (docs/performance-history.md). A line waits at most 100 ms, and pino flushes what is pending when the
 * process exits.
 */
export function createLogger(
  level: string,
  destination: pino.DestinationStream = pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 100 }),
): Logger {
  return pino(
    {
      level,
      base: { service: 'oncehook' },
      redact: {
        paths: ['headers.authorization', 'headers.cookie', '*.secrets', 'secrets', 'token', 'adminToken'],
        censor: '[redacted]',
      },
      serializers: { err: (error: unknown) => pino.stdSerializers.err(withoutParameters(error) as Error) },
    },
    destination,
  );
}

/**
 * drizzle's failed-query error puts the statement's parameters in its message: for ingest's batch that is
 * every receipt's body and headers, for the forwarder's the bodies it sends. Logged, such an error keeps the
 * statement and the database's own error (its cause), never the parameters.
 */
export function withoutParameters(error: unknown): unknown {
  if (!(error instanceof Error) || !('query' in error) || !('params' in error)) return error;
  const bare = new Error(`Failed query: ${String(error.query)}`, { cause: error.cause });
  bare.name = error.name;
  if (error.stack) bare.stack = error.stack.replace(error.message, bare.message);
  return bare;
}
