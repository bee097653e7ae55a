import type { WriteLane } from './connect.ts';
import { isRetryable, isStalledWrite, STALLED_WRITE } from './retryable.ts';

/** How long a statement on a lane may go without an answer, and who is told when one does. */
export interface Stall {
  ms: number;
  onStall(): void;
}

/** `work`, or the error `late()` makes once `ms` have passed without it settling. */
export function settleWithin<T>(work: PromiseLike<T>, ms: number, late: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), ms);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}

/**
 * `work`, a statement on `lane`, whose client is given up when it fails the statement:
 * - after `stall.ms` without an answer the work fails as `STALLED_WRITE`. A network path that died without a
 *   reset would otherwise hold the statement, and everything waiting behind it, until TCP gives up. Waiting for
 *   the abandoned statement's own failure is not needed: whoever called retries on a new connection either way;
 * - after a connection failure, so the next try starts on a new client: one whose connection failed was seen
 *   to hang its next statement across a database restart.
 * Without an abandonable lane (PGlite, in this process) the work is simply awaited.
 */
export function onLane<T>(lane: { readonly abandon?: WriteLane['abandon'] }, stall: Stall | undefined, work: Promise<T>): Promise<T> {
  const abandon = lane.abandon;
  if (!abandon) return work;
  const watched = stall
    ? settleWithin(work, stall.ms, () => {
        abandon();
        stall.onStall();
        return Object.assign(new Error(`no answer from the database in ${stall.ms} ms; its connection was abandoned`), { code: STALLED_WRITE });
      })
    : work;
  return watched.catch((error: unknown) => {
    if (isRetryable(error) && !isStalledWrite(error)) abandon();
    throw error;
  });
}
