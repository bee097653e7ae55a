import { sha256Hex } from '../ids.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';
import { isShaped } from '../shape/url-template.ts';
import { releaseUnsent, renewLease, type ClaimedTask } from '../store/atomic/claim.ts';
import type { AttemptFinish } from '../store/atomic/finish.ts';
import type { Db } from '../store/connect.ts';
import { classifyLookup, classifySend, OUTCOME_CLASSES, type Verdict } from './classify.ts';
import { decide, withoutToken, withoutUrl, type Decision } from './decide.ts';
import { exchange } from './exchange.ts';
import type { Tokens } from './oauth2.ts';
import type { Pools } from './pools.ts';
import { lookupRequest, sendRequest } from './request.ts';
import type { Lookup, Route } from './routes.ts';

export interface AttemptDeps {
  db: Db;
  pools: Pools;
  owner: string;
  /** Records how an attempt ended; the forwarder shares one commit among attempts finishing together. */
  finish(f: AttemptFinish): Promise<boolean>;
  logger: Logger;
  metrics: Metrics;
  /** Called once the downstream has answered (or failed to): the request's slot is free for another task. */
  answered?: () => void;
  /** Aborted when a stopping worker's deadline passes: the attempt is cut short and handed back. */
  release?: AbortSignal;
  /** The OAuth 2.0 tokens of the actions with `auth.oauth2`, shared by every attempt of this worker. */
  tokens: Tokens;
}

/**
 * Runs one claimed send or lookup and records how it ended. The lease is renewed while the request is in
 * flight, so a slow answer is never mistaken for a dead worker. If the finish cannot be written, the lease
 * expires and the attempt is reconciled as an unknown outcome: nothing is lost, and nothing is guessed.
 */
export async function runAttempt(task: ClaimedTask, route: Route, deps: AttemptDeps): Promise<void> {
  const { db, owner, logger } = deps;
  const renewal = setInterval(() => {
    renewLease(db, { taskId: task.id, owner, leaseMs: route.leaseMs }).then(
      (held) => held || logger.warn({ task: task.id }, 'lease lost mid-attempt; the result will be recorded as superseded'),
      (error: unknown) => logger.warn({ err: error, task: task.id }, 'lease renewal failed'),
    );
  }, Math.max(100, route.leaseMs / 3));
  try {
    const lookup = task.mode === 'lookup' ? route.lookup : null;
    const frozen = route.frozenUrls ? { requestUrl: task.requestUrl, lookupUrl: task.lookupUrl } : null;
    if (frozen !== null && unfrozen(route, lookup, frozen)) {
      deps.answered?.();
      return await record(task, route, deps, { ...withoutUrl(task), durationMs: 0, requestSha256: null });
    }
    const outgoing =
      lookup === null ? sendRequest(task, route, frozen?.requestUrl) : lookupRequest(task, route, lookup, frozen?.lookupUrl);
    const started = performance.now();
    const auth = route.oauth2 === null ? null : await deps.tokens.token(route.key, route.oauth2, route.config.timeoutMs);
    if (auth !== null && !('token' in auth)) {
      deps.answered?.();
      if (deps.release?.aborted) return await handBack(task, deps);
      const { verdict, decision } = withoutToken(auth, task, route);
      return await record(task, route, deps, { verdict, decision, durationMs: performance.now() - started, requestSha256: null });
    }
    if (auth !== null) outgoing.headers.authorization = `Bearer ${auth.token}`;
    // A lookup may live on another origin than the action: the pool is the request's own.
    const exchanged = await exchange(deps.pools.for(outgoing.origin, route.config.timeoutMs), outgoing, deps.release);
    const durationMs = performance.now() - started;
    deps.answered?.();
    if (deps.release?.aborted && exchanged.kind === 'failure' && !exchanged.written) return await handBack(task, deps);
    const mask = auth === null ? route.mask : (text: string) => deps.tokens.mask(route.mask(text));
    let verdict =
      lookup === null
        ? classifySend(exchanged, route.config.referencePointer, mask)
        : classifyLookup(exchanged, lookup.referencePointer, lookup.found, mask);
    if (auth !== null) verdict = withTokenAnswered(verdict, route, deps, auth.token);
    const requestSha256 = outgoing.body === null ? null : sha256Hex(outgoing.body);
    await record(task, route, deps, { verdict, decision: decide(verdict, task, route), durationMs, requestSha256 });
  } catch (error) {
    logger.error({ err: error, task: task.id }, 'attempt could not be recorded; its lease will expire and it will be reconciled');
  } finally {
    clearInterval(renewal);
  }
}

/** The request's URL names the delivery, but the task has none frozen: it was made before the template. */
function unfrozen(route: Route, lookup: Lookup | null, frozen: { requestUrl: string | null; lookupUrl: string | null }): boolean {
  return lookup === null ? frozen.requestUrl === null && isShaped(route.config.url) : frozen.lookupUrl === null && isShaped(lookup.template);
}

/** A stopping worker's claim that was never sent goes back as it was claimed. */
async function handBack(task: ClaimedTask, deps: AttemptDeps): Promise<void> {
  const released = await releaseUnsent(deps.db, { taskId: task.id, claim: task.claim!, owner: deps.owner, mode: task.mode, priorState: task.priorState });
  deps.logger.info({ task: task.id, source: task.source, action: task.action, released }, 'stopping: handed back a claim that was never sent');
}

/**
 * What a 401 says under `auth.oauth2`: the first to a token is taken for a token the API no longer honours (revoked,
 * expired early), so the request counts as not sent and the next one fetches a new token; a 401 to that one is the
 * API refusing the client, classified as any 401.
 */
function withTokenAnswered(verdict: Verdict, route: Route, deps: AttemptDeps, token: string): Verdict {
  if (verdict.class === OUTCOME_CLASSES.success || verdict.class === OUTCOME_CLASSES.found) deps.tokens.accepted(route.key, token);
  if (verdict.status !== 401 || !('error' in verdict) || !deps.tokens.refused(route.key, token)) return verdict;
  return { class: OUTCOME_CLASSES.notSent, status: 401, error: `not sent: ${verdict.error}; the next attempt fetches a new token` };
}

/** Records how an attempt ended: its ledger row and the task's next state, a metric and a log line. */
async function record(
  task: ClaimedTask,
  route: Route,
  deps: AttemptDeps,
  ended: { verdict: Verdict; decision: Decision; durationMs: number; requestSha256: string | null },
): Promise<void> {
  const { verdict, decision, durationMs } = ended;
  // Object.assign, not a spread followed by more fields: seven of those cost ~9 µs a task on Node 20 (decide.ts).
  const kept = await deps.finish(
    Object.assign({}, decision, { taskId: task.id, claim: task.claim!, owner: deps.owner, durationMs, class: verdict.class, requestSha256: ended.requestSha256 }),
  );
  deps.metrics.forwardAttempts.inc({ source: task.source, action: task.action, class: verdict.class });
  deps.metrics.forwardSeconds.observe({ source: task.source, action: task.action, kind: task.mode }, durationMs / 1000);
  if (kept) deps.metrics.taskTransitions.inc({ source: task.source, action: task.action, state: decision.state });
  deps.logger.info(
    {
      task: task.id,
      source: task.source,
      action: task.action,
      kind: task.mode,
      attempt: task.attempts,
      class: verdict.class,
      status: verdict.status,
      next: decision.state,
      // Why it did not succeed (a refused connection, the downstream's answer), as the ledger keeps it.
      error: decision.error ?? undefined,
    },
    decision.decision,
  );
}
