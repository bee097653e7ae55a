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
      redact: { paths: ['headers.authorization', 'headers.cookie', 'secrets', 'token', 'adminToken'], censor: CENSOR },
      // `secrets` one level down (a source's config logged whole) is hidden here, not by a `*.secrets` redact path:
      // pino runs a wildcard path's redaction on every field of every line, which cost each forwarded task's line
      // ~3 KB of garbage and a tenth of its CPU for fields that are strings and numbers.
      formatters: { log: secretsOneLevelDown },
      serializers: { err: (error: unknown) => withoutSecrets(pino.stdSerializers.err(withoutParameters(error) as Error)) },
    },
    destination,
  );
}

const CENSOR = '[redacted]';

const hasSecrets = (value: unknown): value is { secrets: unknown } =>
  typeof value === 'object' && value !== null && (value as { secrets?: unknown }).secrets !== undefined;

/** A copy with `secrets` censored, of the same prototype: it serializes as the original would have. */
function withoutSecrets<T>(value: T): T {
  return hasSecrets(value) ? Object.assign(Object.create(Object.getPrototypeOf(value) as object) as object, value, { secrets: CENSOR }) as T : value;
}

/** The line's fields, with any field's `secrets` censored; the same object, not a copy, when none has one. */
function secretsOneLevelDown(fields: Record<string, unknown>): Record<string, unknown> {
  let out = fields;
  for (const key in fields) {
    // `err` is the err serializer's, which censors what it makes.
    if (key === 'err' || !hasSecrets(fields[key])) continue;
    if (out === fields) out = { ...fields };
    out[key] = withoutSecrets(fields[key]);
  }
  return out;
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
