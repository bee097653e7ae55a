import { CLAIM_MODES, type ClaimedTask } from '../store/atomic/claim.ts';
import type { AttemptFinish } from '../store/atomic/finish.ts';
import { TASK_STATES } from '../store/decisions.ts';
import { backoffMs, type RetryAfter } from './backoff.ts';
import { OUTCOME_CLASSES, type LookupStanding, type Verdict } from './classify.ts';
import type { Route } from './routes.ts';

/** The part of an attempt's finish that follows from its verdict: where the task goes, and when. */
export type Decision = Pick<
  AttemptFinish,
  'state' | 'delayMs' | 'notBefore' | 'decision' | 'destination' | 'reference' | 'error' | 'status' | 'lookupNotCounted'
>;

/** The longest wait a downstream's Retry-After is granted, unless the action's backoff allows longer. */
export const LONGEST_RETRY_AFTER_MS = 3_600_000;

/**
 * The answer to each kind of outcome. Nothing here resends an unknown outcome: it becomes
 * `outcome_unknown`, and the claim reconciles it in database time by the rules in docs/forwarding.md
 * ("Outcome unknown").
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
  switch (verdict.class) {
    case OUTCOME_CLASSES.success:
    case OUTCOME_CLASSES.found:
      return decided(verdict, { state: TASK_STATES.succeeded, reference: verdict.reference, error: null, decision: 'succeeded' });
    case OUTCOME_CLASSES.rejected:
      return decided(verdict, { state: TASK_STATES.failed, error: verdict.error, decision: 'failed: the downstream rejected the input' });
    case OUTCOME_CLASSES.refused:
      return decided(verdict, {
        state: TASK_STATES.failed,
        error: verdict.error,
        decision: 'failed, and the destination paused until a person resumes it',
        destination: { origin: route.destination, pause: `${verdict.status} refused oncehook's request for ${task.id}` },
      });
    case OUTCOME_CLASSES.absent:
      return task.attempts >= config.maxAttempts
        ? decided(verdict, { state: TASK_STATES.failed, error: verdict.error, decision: 'failed: not done, and attempts exhausted' })
        : decided(verdict, { state: TASK_STATES.pending, error: verdict.error, decision: 'send again: confirmed absent' });
  }
  if (task.mode === 'lookup' && route.lookup !== null && verdict.class === OUTCOME_CLASSES.unanswered && verdict.standing) {
    const base = { status: verdict.status, reference: null, notBefore: null, destination: null, delayMs: 0, error: verdict.error };
    return lookupOriginAnswered(verdict.standing, base, task, route.lookup.destination, route);
  }
  if (task.mode === 'lookup' || verdict.class === OUTCOME_CLASSES.unknown || verdict.class === OUTCOME_CLASSES.unanswered) {
    return decided(verdict, {
      state: TASK_STATES.outcomeUnknown,
      error: verdict.error,
      delayMs: task.mode === 'lookup' ? backoffMs(task.lookups, config.backoff) : settleMs(task, route),
      decision: task.mode === 'lookup' ? 'ask the lookup again later' : 'reconcile: the effect may exist',
    });
  }
  // Nothing reached the downstream, or it asked to be tried again.
  const coolDown = verdict.class === OUTCOME_CLASSES.retryable && verdict.coolDown;
  const destination = coolDown ? { origin: route.destination, pause: null } : null;
  if (task.attempts >= config.maxAttempts) {
    return decided(verdict, { state: TASK_STATES.failed, error: verdict.error, destination, decision: 'failed: attempts exhausted' });
  }
  const retryAfter = verdict.class === OUTCOME_CLASSES.retryable ? verdict.retryAfter : null;
  const wait = waitOf(retryAfter, backoffMs(task.attempts, config.backoff), coolDown, route);
  return decided(verdict, {
    state: TASK_STATES.pending,
    error: verdict.error,
    destination,
    delayMs: wait.delayMs,
    notBefore: wait.notBefore,
    decision: wait.capped
      ? 'retry after the downstream\'s Retry-After, cut to the longest wait oncehook allows'
      : retryAfter
        ? 'retry after the downstream\'s Retry-After'
        : 'retry with backoff',
  });
}

/**
 * A decision on the verdict's status, with no reference, wait or destination change unless given. Written out field
 * by field, not as `{ ...base, state, … }`: on Node 20 each property after a spread cost about a microsecond, and a
 * task's decision and its finish had eleven (`bench/worker-cost.ts`).
 */
function decided(
  verdict: Verdict,
  d: Pick<Decision, 'state' | 'error' | 'decision'> & Partial<Pick<Decision, 'reference' | 'notBefore' | 'destination' | 'delayMs'>>,
): Decision {
  return {
    status: verdict.status,
    reference: d.reference ?? null,
    notBefore: d.notBefore ?? null,
    destination: d.destination ?? null,
    delayMs: d.delayMs ?? 0,
    state: d.state,
    error: d.error,
    decision: d.decision,
  };
}

/**
 * A request that went nowhere for want of a token (`auth.oauth2`): nothing was sent. A token endpoint that could not
 * be asked, or was overloaded, holds the task as a refused connection does, tried again with backoff, and cools
 * the origin the request was for as a 503 does: every other task of it would meet the same endpoint, and waiting
 * they spend none of their attempts. One that refuses the client pauses that origin until a person resumes it; the
 * task waits there in the state it was claimed from.
 */
export function withoutToken(
  outcome: { unreachable: string } | { refused: string },
  task: ClaimedTask,
  route: Route,
): { verdict: Verdict; decision: Decision } {
  const lookup = task.mode === CLAIM_MODES.lookup;
  const origin = lookup && route.lookup !== null ? route.lookup.destination : route.destination;
  if ('unreachable' in outcome) {
    const verdict: Verdict = { class: OUTCOME_CLASSES.notSent, status: null, error: `not sent: ${outcome.unreachable}` };
    const decision = decide(verdict, task, route);
    if (decision.state === TASK_STATES.failed) return { verdict, decision };
    const delayMs = Math.max(decision.delayMs, route.config.backoff.initialMs);
    return { verdict, decision: { ...decision, delayMs, destination: { origin, pause: null } } };
  }
  const verdict: Verdict = { class: OUTCOME_CLASSES.notSent, status: null, error: `not sent: ${outcome.refused}` };
  const decision: Decision = {
    status: null,
    reference: null,
    notBefore: null,
    delayMs: backoffMs(lookup ? task.lookups : task.attempts, route.config.backoff),
    state: task.priorState,
    error: verdict.error,
    destination: { origin, pause: outcome.refused },
    decision: 'wait: the token endpoint refused the client, and the destination is paused until a person resumes it',
    ...(lookup ? { lookupNotCounted: true } : {}),
  };
  return { verdict, decision };
}

/**
 * A task made before its action's url (or its lookup's) named the delivery has no URL of its own, and the template
 * cannot be sent as written. Nothing is sent: a send fails, a lookup leaves the unknown outcome to a person.
 */
export function withoutUrl(task: ClaimedTask): { verdict: Verdict; decision: Decision } {
  const lookup = task.mode === CLAIM_MODES.lookup;
  const error = `not sent: the task was made before its action's ${lookup ? 'lookup url' : 'url'} named the delivery, so it has no URL of its own`;
  const verdict: Verdict = { class: OUTCOME_CLASSES.notSent, status: null, error };
  const base = { status: null, reference: null, notBefore: null, delayMs: 0, destination: null, error };
  return {
    verdict,
    decision: lookup
      ? { ...base, state: TASK_STATES.needsReview, decision: 'review: the lookup cannot be asked, and the first attempt may have taken effect' }
      : { ...base, state: TASK_STATES.failed, decision: 'failed: no URL to send to; resolve or cancel it, or replay it once the url is a plain one again' },
  };
}

/**
 * A lookup answered for its origin, not for the effect: 429 or 503 cool the lookup's origin as a send's answer
 * cools the action's, 401 or 403 pause it, whichever origin the action sends to. The task stays
 * `outcome_unknown` — the effect may exist, so never `failed` — and the claim asks no lookup there until the
 * origin is open again (a keyed resend, which goes to the action's origin, is not held).
 *
 * The lookup is not counted against the task's budget (`maxAttempts` lookups, then a person): the claim counted
 * it, and the finish takes it back. An overloaded or refusing lookup API said nothing about the effect, and a
 * budget spent on its 429s sent every task it reconciles to review during an hour of rate limiting, or after a
 * wrong API key, though asking once it recovers would settle them. Nor does the backoff grow from it: a 429
 * without Retry-After waits the same as the last, and the origin's cooldown already holds every other task.
 */
function lookupOriginAnswered(
  standing: LookupStanding,
  base: Omit<Decision, 'state' | 'decision'>,
  task: ClaimedTask,
  origin: string,
  route: Route,
): Decision {
  const jittered = backoffMs(task.lookups, route.config.backoff);
  const unknown = { ...base, state: TASK_STATES.outcomeUnknown, lookupNotCounted: true };
  if (!standing.cooling) {
    return {
      ...unknown,
      delayMs: jittered,
      destination: { origin, pause: `${base.status} refused oncehook's lookup for ${task.id}` },
      decision: 'ask the lookup again once a person resumes its origin; not counted as a lookup',
    };
  }
  const wait = waitOf(standing.retryAfter, jittered, true, route);
  return {
    ...unknown,
    delayMs: wait.delayMs,
    notBefore: wait.notBefore,
    destination: { origin, pause: null },
    decision:
      `ask the lookup again after ${standing.retryAfter ? 'its Retry-After' : 'a backoff'}` +
      `${wait.capped ? ', cut to the longest wait oncehook allows' : ''}; its origin cooled down, and not counted as a lookup`,
  };
}

/**
 * How long a task waits when the downstream asked for time: its Retry-After, else the backoff, at least
 * `backoff.initialMs` when the answer cools a whole origin — a cooldown must last a while even when the jitter
 * draws zero.
 */
function waitOf(
  retryAfter: RetryAfter | null,
  jittered: number,
  coolDown: boolean,
  route: Route,
): { delayMs: number; notBefore: Date | null; capped: boolean } {
  const { backoff } = route.config;
  // A Retry-After past an hour, or the action's longest backoff if that is longer, is cut to it: a downstream's
  // "99999999999" would hold the task and cool its destination for millennia, and a larger one does not fit
  // the database's interval at all.
  const longestMs = Math.max(backoff.maxMs, LONGEST_RETRY_AFTER_MS);
  const askedMs = retryAfter && ('delayMs' in retryAfter ? retryAfter.delayMs : retryAfter.at.getTime() - Date.now());
  const capped = askedMs !== null && askedMs > longestMs;
  return {
    capped,
    delayMs: capped
      ? longestMs
      : retryAfter && 'delayMs' in retryAfter
        ? retryAfter.delayMs
        : coolDown
          ? Math.max(jittered, backoff.initialMs)
          : jittered,
    notBefore: !capped && retryAfter && 'at' in retryAfter ? retryAfter.at : null,
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
