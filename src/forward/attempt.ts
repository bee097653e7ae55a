import { sha256Hex } from '../ids.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';
import { frozenUrls, releaseUnsent, renewLease, type ClaimedTask } from '../store/atomic/claim.ts';
import type { AttemptFinish } from '../store/atomic/finish.ts';
import type { Db } from '../store/connect.ts';
import { classifyLookup, classifySend } from './classify.ts';
import { decide } from './decide.ts';
import { exchange } from './exchange.ts';
import type { Pools } from './pools.ts';
import { lookupRequest, sendRequest } from './request.ts';
import type { Route } from './routes.ts';

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
    const frozen = route.frozenUrls ? await frozenUrls(db, task.id) : null;
    const outgoing =
      lookup === null ? sendRequest(task, route, frozen?.requestUrl) : lookupRequest(task, route, lookup, frozen?.lookupUrl);
    const started = performance.now();
    // A lookup may live on another origin than the action: the pool is the request's own.
    const exchanged = await exchange(deps.pools.for(outgoing.url.origin, route.config.timeoutMs), outgoing, deps.release);
    const durationMs = performance.now() - started;
    deps.answered?.();
    if (deps.release?.aborted && exchanged.kind === 'failure' && !exchanged.written) {
      const released = await releaseUnsent(db, { taskId: task.id, attemptId: task.attemptId!, owner, mode: task.mode, priorState: task.priorState });
      logger.info({ task: task.id, source: task.source, action: task.action, released }, 'stopping: handed back a claim that was never sent');
      return;
    }
    const verdict =
      lookup === null
        ? classifySend(exchanged, route.config.referencePointer, route.mask)
        : classifyLookup(exchanged, lookup.referencePointer, lookup.found, route.mask);
    const decision = decide(verdict, task, route);
    const kept = await deps.finish({
      ...decision,
      taskId: task.id,
      attemptId: task.attemptId!,
      owner,
      durationMs,
      class: verdict.class,
      requestSha256: outgoing.body === null ? null : sha256Hex(outgoing.body),
    });
    deps.metrics.forwardAttempts.inc({ source: task.source, action: task.action, class: verdict.class });
    deps.metrics.forwardSeconds.observe({ source: task.source, action: task.action, kind: task.mode }, durationMs / 1000);
    if (kept) deps.metrics.taskTransitions.inc({ source: task.source, action: task.action, state: decision.state });
    logger.info(
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
  } catch (error) {
    logger.error({ err: error, task: task.id }, 'attempt could not be recorded; its lease will expire and it will be reconciled');
  } finally {
    clearInterval(renewal);
  }
}
