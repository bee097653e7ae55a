import { InputError } from '../errors.ts';
import { bulkDecide, countBodyPurged, countBulk, countSkippedByReplay, shapedReplays, unshapedTasks, type BulkDecision } from '../store/atomic/bulk.ts';
import type { Decider } from '../store/atomic/operator.ts';
import { replayDecision, retryDecision, type RetryDeps } from './retry.ts';

/** What a bulk decision selects by: the list's state, source and action (and nothing else the list filters by). */
export interface BulkFilter {
  states?: readonly string[] | undefined;
  source?: string | undefined;
  action?: string | undefined;
}

/** What a bulk decision passes over and why, the same in its dry run and in its answer. */
export interface BulkSkipped {
  skippedBodyPurged: number;
  skippedByReplay: number;
  skippedTransformFailed: number;
}

export type BulkOutcome =
  | ({ dryRun: true; kind: BulkDecision; count: number; transformAgain?: number } & BulkSkipped)
  | ({ dryRun: false; kind: BulkDecision; count: number; tasks: string[]; transformAgain?: number; transformErrors?: { task: string; error: string }[] } & BulkSkipped);

/**
 * The filter a bulk decision may be taken over, or a 400 saying why not: at least one field, and for a replay a
 * state — replay's states include succeeded, so a filter by source alone would redo every order that went through.
 */
export function checkBulkFilter(kind: BulkDecision, filter: BulkFilter): void {
  if (filter.states === undefined && filter.source === undefined && filter.action === undefined) {
    throw new InputError('invalid_request', 'name at least one of state, source or action: a bulk decision over every task is too easy to make by mistake');
  }
  if (kind === 'replay' && filter.states === undefined) {
    throw new InputError('invalid_request', 'state: a bulk replay needs it (e.g. "failed"): every selected task is sent again, succeeded ones too');
  }
}

/**
 * A bulk retry or replay, or its dry run: what `POST /api/tasks/bulk/{kind}` answers and the dashboard's bulk
 * forms show, from the same store functions.
 */
export async function decideInBulk(deps: RetryDeps, kind: BulkDecision, filter: BulkFilter, run: { dryRun: true } | { dryRun: false; who: Decider }): Promise<BulkOutcome> {
  checkBulkFilter(kind, filter);
  const { db } = deps.store;
  // Counted before the write: each replay it makes is itself a replay on its way, and counted after, every task
  // it replayed would be reported passed over.
  const skipped = {
    skippedBodyPurged: await countBodyPurged(db, kind, filter),
    skippedByReplay: await countSkippedByReplay(db, kind, filter),
  };
  // Tasks whose transform failed: a retry computes it again for each (`transformAgain`), one at a time as a retry
  // of one does, passing over those it fails on again; a replay passes over them all, as it refuses one.
  const unshaped = await unshapedTasks(db, kind, filter);
  const again = kind === 'retry' ? { transformAgain: unshaped.length } : {};
  // Tasks whose body their transform made: a replay shapes each again, one at a time as a replay of one does.
  const shaped = kind === 'replay' ? await shapedReplays(db, filter) : [];
  if (run.dryRun) {
    const count = (await countBulk(db, kind, filter)) + (kind === 'retry' ? unshaped.length : shaped.length);
    return { dryRun: true, kind, count, ...skipped, skippedTransformFailed: kind === 'replay' ? unshaped.length : 0, ...again };
  }
  const ids = await bulkDecide(db, kind, filter, run.who);
  if (kind === 'replay') {
    let failedAgain = 0;
    for (const id of shaped) {
      const outcome = await replayDecision(deps, id, run.who);
      if (outcome.done) ids.push(outcome.replay);
      else if (outcome.transformError !== undefined) failedAgain++;
    }
    return { dryRun: false, kind, count: ids.length, tasks: ids, ...skipped, skippedTransformFailed: unshaped.length + failedAgain };
  }
  const transformErrors: { task: string; error: string }[] = [];
  for (const id of unshaped) {
    const outcome = await retryDecision(deps, id, run.who);
    if (outcome.done) ids.push(id);
    else if (outcome.transformError !== undefined) transformErrors.push({ task: id, error: outcome.transformError });
  }
  return {
    dryRun: false,
    kind,
    count: ids.length,
    tasks: ids,
    ...skipped,
    skippedTransformFailed: transformErrors.length,
    ...again,
    // The first few, each with why: enough to see whether one fix would do for all.
    transformErrors: transformErrors.slice(0, 10),
  };
}
