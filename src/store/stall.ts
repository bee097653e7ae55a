import type { WriteLane } from './connect.ts';
import { STALLED_WRITE } from './retryable.ts';

/** How long a statement on a lane may go without an answer, and who is told when one does. */
export interface Stall {
  ms: number;
  onStall(): void;
}

/**
 * `work`, or a retryable failure (`STALLED_WRITE`) once it has gone `stall.ms` without an answer and its
 * lane's connection was abandoned. A network path that died without a reset would otherwise hold the
 * statement, and everything waiting behind it, until TCP gives up. Waiting for the abandoned statement's own
 * failure is not needed: whoever called retries on a new connection either way. Without an abandonable lane
 * (PGlite, in this process) the work is simply awaited.
 */
export function watchStall<T>(lane: { readonly abandon?: WriteLane['abandon'] }, stall: Stall | undefined, work: Promise<T>): Promise<T> {
  const abandon = lane.abandon;
  if (!stall || !abandon) return work;
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      abandon();
      stall.onStall();
      reject(Object.assign(new Error(`no answer from the database in ${stall.ms} ms; its connection was abandoned`), { code: STALLED_WRITE }));
    }, stall.ms);
  });
  return Promise.race([work, stalled]).finally(() => clearTimeout(timer));
}
