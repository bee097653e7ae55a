import type { MiddlewareHandler } from 'hono';
import { HttpError } from '../errors.ts';
import { settleWithin } from '../store/lane.ts';
import { isRetryable, isUnreachable } from '../store/retryable.ts';

/** Seconds a person's tool is told to wait before asking again. */
const RETRY_AFTER_SECONDS = '5';

/**
 * A person's request (the admin API, the dashboard) waits for the database at most `ms`. A pooled connection
 * gone silent (a failover that moved the address) would otherwise hold the request until TCP gives up, about
 * 15 minutes. A change may still commit after its 503: the answer says to look before asking again, and every
 * operator action is guarded by the state it starts from, so asking twice does not act twice.
 */
export function databaseDeadline(ms: number): MiddlewareHandler {
  return async (_c, next) => {
    await settleWithin(
      next(),
      ms,
      () =>
        new HttpError(
          503,
          'database_unanswered',
          `the database has not answered in ${ms / 1000} s; a change asked for may still take effect, so look before asking again`,
          { 'retry-after': RETRY_AFTER_SECONDS },
        ),
    );
  };
}

/** The database cannot be reached or lost the connection: not the request's fault, and worth asking again. */
export function unavailableAnswer(error: unknown): HttpError | undefined {
  if (!isRetryable(error) && !isUnreachable(error)) return undefined;
  return new HttpError(503, 'database_unavailable', 'the database cannot be reached just now; ask again shortly', {
    'retry-after': RETRY_AFTER_SECONDS,
  });
}
