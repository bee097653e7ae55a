import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Config } from '../config/schema.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';
import { CLAIM_MODES, claimTasks, nextDueInMs, reclaimExpiredLeases } from '../store/atomic.ts';
import type { Store } from '../store/connect.ts';
import { TASK_STATES, TASKS_CHANNEL } from '../store/decisions.ts';
import { runAttempt } from './attempt.ts';
import { Pools } from './pools.ts';
import { Routes } from './routes.ts';

export interface ForwarderOptions {
  /** Attempts in flight at once in this process. */
  concurrency: number;
  /** The longest wait between two looks at the queue: NOTIFY is only a latency hint, this is the guarantee. */
  pollMs: number;
  /** How long past an action's `timeoutMs` a lease outlives a silent worker (CONTRACT.md: 30 seconds). */
  leaseGraceMs: number;
}

const FORWARDER_DEFAULTS: ForwarderOptions = { concurrency: 16, pollMs: 2000, leaseGraceMs: 30_000 };

/** A due task another worker holds locked for an instant is skipped; look again soon, not in a tight loop. */
const MIN_WAIT_MS = 10;

export interface ForwarderDeps {
  config: Config;
  store: Store;
  logger: Logger;
  metrics: Metrics;
}

/**
 * The outbox worker: claims due tasks, runs their attempts, and looks again when ingest's NOTIFY arrives,
 * when an attempt ends, when the next task falls due, or at the latest after `pollMs`. Any number of
 * workers, in any number of processes, share one database: the claim's SKIP LOCKED keeps them apart.
 */
export class Forwarder {
  readonly #deps: ForwarderDeps;
  readonly #options: ForwarderOptions;
  readonly #routes: Routes;
  readonly #pools: Pools;
  readonly #owner = `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
  readonly #inFlight = new Set<Promise<void>>();
  #ticking: Promise<void> | null = null;
  #again = false;
  #stopped = false;
  #timer: NodeJS.Timeout | undefined;
  #unlisten: (() => Promise<void>) | undefined;

  constructor(deps: ForwarderDeps, options: Partial<ForwarderOptions> = {}) {
    this.#deps = deps;
    this.#options = { ...FORWARDER_DEFAULTS, ...options };
    this.#routes = new Routes(deps.config, this.#options.leaseGraceMs);
    this.#pools = new Pools(this.#options.concurrency);
  }

  async start(): Promise<void> {
    // onSubscribe fires after every (re)subscription: a notification sent while unsubscribed is caught up.
    this.#unlisten = await this.#deps.store.listen(TASKS_CHANNEL, () => this.wake(), () => this.wake());
  }

  /** Looks at the queue now, or right after the look in progress. */
  wake(): void {
    if (this.#stopped) return;
    if (this.#ticking) {
      this.#again = true;
      return;
    }
    this.#ticking = this.#tick().finally(() => {
      this.#ticking = null;
      if (this.#again) this.wake();
    });
  }

  /** Stops claiming and lets the attempts in flight finish: aborting one would make its outcome unknown. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#unlisten?.();
    await this.#ticking;
    await Promise.allSettled([...this.#inFlight]);
    await this.#pools.close();
  }

  async #tick(): Promise<void> {
    let wait = this.#options.pollMs;
    try {
      do {
        this.#again = false;
        await this.#reclaim();
        await this.#claim();
      } while (this.#again && !this.#stopped);
      if (this.#inFlight.size < this.#options.concurrency) {
        const due = await nextDueInMs(this.#deps.store.db, this.#routes.forClaim);
        if (due !== null) wait = Math.max(MIN_WAIT_MS, Math.min(wait, Math.ceil(due)));
      }
    } catch (error) {
      this.#deps.logger.error({ err: error }, 'the forwarder could not read its queue; trying again');
    }
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.wake(), wait);
  }

  async #reclaim(): Promise<void> {
    const reclaimed = await reclaimExpiredLeases(this.#deps.store.db);
    for (const task of reclaimed) {
      this.#deps.metrics.leasesReclaimed.inc();
      this.#deps.logger.warn({ task: task.id, source: task.source, action: task.action }, 'lease expired mid-attempt: outcome unknown');
    }
  }

  async #claim(): Promise<void> {
    const free = this.#options.concurrency - this.#inFlight.size;
    if (free <= 0 || this.#stopped) return;
    const claimed = await claimTasks(this.#deps.store.db, { owner: this.#owner, routes: this.#routes.forClaim, limit: free });
    if (claimed.length === free) this.#again = true;
    for (const task of claimed) {
      if (task.mode === CLAIM_MODES.review) {
        this.#deps.metrics.taskTransitions.inc({ source: task.source, action: task.action, state: TASK_STATES.needsReview });
        this.#deps.logger.warn({ task: task.id, source: task.source, action: task.action }, task.reason ?? 'needs review');
        continue;
      }
      const route = this.#routes.get(task.source, task.action);
      const deps = { db: this.#deps.store.db, pools: this.#pools, owner: this.#owner, logger: this.#deps.logger, metrics: this.#deps.metrics };
      const running: Promise<void> = runAttempt(task, route, deps).finally(() => {
        this.#inFlight.delete(running);
        this.wake();
      });
      this.#inFlight.add(running);
    }
  }
}
