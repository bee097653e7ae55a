/**
 * Failures that say nothing about the statement, only about the connection or the moment: running it again on
 * another connection may well succeed. Drizzle wraps the driver's error, so the code is looked for on the
 * error and on its cause. Unknown codes are not retried.
 */
/** A group commit's batch whose connection went silent and was abandoned (group-commit.ts). */
export const STALLED_WRITE = 'ONCEHOOK_STALLED_WRITE';

const RETRYABLE_CODES = new Set([
  STALLED_WRITE,
  // postgres.js, when a pooled connection turns out to be dead
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'ECONNRESET',
  'EPIPE',
  // SQLSTATE: the server shut the session down, or the connection failed
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08003',
  '08006',
  // SQLSTATE: a concurrent transaction won; the same statement may commit next time
  '40001',
  '40P01',
]);

export function isRetryable(error: unknown): boolean {
  return withCode(error, (code) => RETRYABLE_CODES.has(code)) !== undefined;
}

/**
 * No connection could be made: the server is down, refusing, or its name does not resolve just now; or no host is
 * what target_session_attrs asks for (a standby, for read-write: a failover not yet done), a code of
 * scripts/patch-postgres.mjs.
 */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'CONNECT_TIMEOUT',
  'TARGET_SESSION_ATTRS_UNMET',
]);

export function isUnreachable(error: unknown): boolean {
  return withCode(error, (code) => UNREACHABLE_CODES.has(code)) !== undefined;
}

export function isStalledWrite(error: unknown): boolean {
  return withCode(error, (code) => code === STALLED_WRITE) !== undefined;
}

/**
 * The database's own error when it is SQLSTATE class 22, a data exception: a value in the statement it refuses
 * (a time out of range, text it cannot hold). The same statement fails the same way every time.
 */
export function dataException(error: unknown): Error | undefined {
  return withCode(error, (code) => /^22[0-9A-Z]{3}$/.test(code));
}

/** The first code found on the error or down its causes (drizzle wraps the driver's error): a driver's or a SQLSTATE. */
export function codeOf(error: unknown): string | undefined {
  return (withCode(error, () => true) as { code?: string } | undefined)?.code;
}

function withCode(error: unknown, matches: (code: string) => boolean): Error | undefined {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; depth++) {
    if (typeof e.code === 'string' && matches(e.code)) return e as unknown as Error;
    e = e.cause as typeof e;
  }
  return undefined;
}
