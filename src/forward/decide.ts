import { CLAIM_MODES, type ClaimedTask } from '../store/atomic/claim.ts';
import type { AttemptFinish } from '../store/atomic/finish.ts';
import { TASK_STATES } from '../store/decisions.ts';
import { backoffMs } from './backoff.ts';
import { OUTCOME_CLASSES, type Verdict } from './classify.ts';
import type { Route } from './routes.ts';

/** The part of an attempt's finish that follows from its verdict: where the task goes, and when. */
export type Decision = Pick<
  AttemptFinish,
  'state' | 'delayMs' | 'notBefore' | 'decision' | 'destination' | 'reference' | 'error' | 'status'
>;

/** The longest wait a downstream's Retry-After is granted, unless the action's backoff allows longer. */
export const LONGEST_RETRY_AFTER_MS = 3_600_000;

/**
 * The answer to each kind of outcome. Nothing here resends an unknown outcome: it becomes
 * `outcome_unknown`, and the claim reconciles it by the rules of CONTRACT.md in database time.
 */
export function decide(verdict: Verdict, task: ClaimedTask, route: Route): Decision {
  const decision = decideAttempt(verdict, task, route);
  return task.mode === CLAIM_MODES.send && task.priorState === TASK_STATES.outcomeUnknown ? stillUnknown(decision, verdict) : decision;
}

/**
 * A resend of an unknown outcome (the claim makes one only under a key the downstream still keeps) that
 * confirms nothing leaves the outcome unknown: the first attempt may have taken effect. Sent back to
 * `pending` after a 503 or a refused connection, the task went out next as a plain send, with no look at the
 * key's age: past the retention, a possible second effect. As `outcome_unknown` the next claim decides
 * again — the same key while it is kept, else the lookup, else a person. Only a success, or the downstream's
 * verdict on the input itself, ends it; a pause or a cooldown of the destination still applies.
 */
function stillUnknown(decision: Decision, verdict: Verdict): Decision {
  if (decision.state === TASK_STATES.succeeded) return decision;
  // A refusal of the resend does not say the first attempt did nothing: "this key was already used" is a 409
  // or a 422 to some downstreams. A person looks.
  if (verdict.class === OUTCOME_CLASSES.rejected) {
    return { ...decision, state: TASK_STATES.needsReview, decision: 'review: the resend was rejected, and the first attempt may have taken effect' };
  }
  return { ...decision, state: TASK_STATES.outcomeUnknown, decision: 'reconcile: the resend confirmed nothing, and the first attempt may have taken effect' };
}

function decideAttempt(verdict: Verdict, task: ClaimedTask, route: Route): Decision {
  const { config } = route;
  const base = { status: verdict.status, reference: null, notBefore: null, destination: null, delayMs: 0 };
  switch (verdict.class) {
    case OUTCOME_CLASSES.success:
    case OUTCOME_CLASSES.found:
      return { ...base, state: TASK_STATES.succeeded, reference: verdict.reference, error: null, decision: 'succeeded' };
    case OUTCOME_CLASSES.rejected:
      return { ...base, state: TASK_STATES.failed, error: verdict.error, decision: 'failed: the downstream rejected the input' };
    case OUTCOME_CLASSES.refused:
      return {
        ...base,
        state: TASK_STATES.failed,
        error: verdict.error,
        decision: 'failed, and the destination paused until a person resumes it',
        destination: { origin: route.destination, pause: `${verdict.status} refused oncehook's request for ${task.id}` },
      };
    case OUTCOME_CLASSES.absent:
      return task.attempts >= config.maxAttempts
        ? { ...base, state: TASK_STATES.failed, error: verdict.error, decision: 'failed: not done, and attempts exhausted' }
        : { ...base, state: TASK_STATES.pending, error: verdict.error, decision: 'send again: confirmed absent' };
  }
  if (task.mode === 'lookup' || verdict.class === OUTCOME_CLASSES.unknown || verdict.class === OUTCOME_CLASSES.unanswered) {
    return {
      ...base,
      state: TASK_STATES.outcomeUnknown,
      error: verdict.error,
      delayMs: task.mode === 'lookup' ? backoffMs(task.lookups, config.backoff) : settleMs(task, route),
      decision: task.mode === 'lookup' ? 'ask the lookup again later' : 'reconcile: the effect may exist',
    };
  }
  // Nothing reached the downstream, or it asked to be tried again.
  const coolDown = verdict.class === OUTCOME_CLASSES.retryable && verdict.coolDown;
  const destination = coolDown ? { origin: route.destination, pause: null } : null;
  if (task.attempts >= config.maxAttempts) {
    return { ...base, state: TASK_STATES.failed, error: verdict.error, destination, decision: 'failed: attempts exhausted' };
  }
  const retryAfter = verdict.class === OUTCOME_CLASSES.retryable ? verdict.retryAfter : null;
  const jittered = backoffMs(task.attempts, config.backoff);
  // A Retry-After past an hour, or the action's longest backoff if that is longer, is cut to it: a downstream's
  // "99999999999" would hold the task and cool its destination for millennia, and a larger one does not fit
  // the database's interval at all.
  const longestMs = Math.max(config.backoff.maxMs, LONGEST_RETRY_AFTER_MS);
  const askedMs = retryAfter && ('delayMs' in retryAfter ? retryAfter.delayMs : retryAfter.at.getTime() - Date.now());
  const capped = askedMs !== null && askedMs > longestMs;
  return {
    ...base,
    state: TASK_STATES.pending,
    error: verdict.error,
    destination,
    // A cooldown must last a while even when the jitter draws zero.
    delayMs: capped
      ? longestMs
      : retryAfter && 'delayMs' in retryAfter
        ? retryAfter.delayMs
        : coolDown
          ? Math.max(jittered, config.backoff.initialMs)
          : jittered,
    notBefore: !capped && retryAfter && 'at' in retryAfter ? retryAfter.at : null,
    decision: capped
      ? 'retry after the downstream\'s Retry-After, cut to the longest wait oncehook allows'
      : retryAfter
        ? 'retry after the downstream\'s Retry-After'
        : 'retry with backoff',
  };
}

/**
 * How long an unknown outcome of a send waits before the claim reconciles it. Before a lookup, at least the
 * action's timeout: a downstream that was still working when oncehook stopped waiting would otherwise be asked
 * at once — the backoff's jitter can draw zero — answer "not there yet", and get the request again.
 */
function settleMs(task: ClaimedTask, route: Route): number {
  const jittered = backoffMs(task.attempts, route.config.backoff);
  return route.lookup === null ? jittered : Math.max(jittered, route.config.timeoutMs);
}
