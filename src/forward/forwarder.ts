import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { hostname } from 'node:os';
import type { Config } from '../config/schema.ts';
import { DEFAULT_LEASE_GRACE_MS } from '../defaults.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';
import { outageLog, type OutageLog } from '../outage-log.ts';
import { ALERTS_SOURCE } from '../store/atomic/alerts.ts';
import { CLAIM_MODES, claimLimited, claimTasks, nextDueInMs, reclaimExpiredLeases, type ClaimedTask } from '../store/atomic/claim.ts';
import { finishAttempts, type AttemptFinish } from '../store/atomic/finish.ts';
import type { Db, Store, WriteLane } from '../store/connect.ts';
import { TASK_STATES, TASKS_CHANNEL } from '../store/decisions.ts';
import { GroupCommit } from '../store/group-commit.ts';
import { onLane, type Stall } from '../store/lane.ts';
import { runAttempt } from './attempt.ts';
import { Tokens } from './oauth2.ts';
import { Pools } from './pools.ts';
import { Routes, type Route } from './routes.ts';
import { SlotNotices } from './slot-notices.ts';

export interface ForwarderOptions {
  /** Attempts in flight at once in this process. */
  concurrency: number;
  /** The longest wait between two looks at the queue: NOTIFY is only a latency hint, this is the guarantee. */
  pollMs: number;
  /** How long past an action's `timeoutMs` a lease outlives a silent worker (its reclaim within 30 s: docs/reliability.md). */
  leaseGraceMs: number;
  /** How long an alert endpoint has to answer; unset, an action's default `timeoutMs`. */
  alertTimeoutMs?: number | undefined;
}

const FORWARDER_DEFAULTS: ForwarderOptions = { concurrency: 64, pollMs: 2000, leaseGraceMs: DEFAULT_LEASE_GRACE_MS };

/** A due task another worker holds locked for an instant is skipped; look again soon, not in a tight loop. */
const MIN_WAIT_MS = 10;

/**
 * Leases expire tens of seconds after a worker fell silent, so looking for expired ones a few times a second
 * is plenty; looking on every pass (one after each finished attempt) cost a statement per task under load.
 */
const RECLAIM_EVERY_MS = 250;

/** Finished attempts written in one transaction at most. */
const FINISHES_PER_BATCH = 128;

/**
 * Slots are refilled together: while attempts are still running, a claim waits until a quarter of the slots
 * are free, or at most REFILL_WAIT_MS. Refilling each slot as its answer arrived made one claim, and then one
 * finish, per task: on PGlite, which runs one statement at a time, a claim and a finish cost ~5 ms whatever
 * their size, and forwarding (and ingest beside it) was bound by their number.
 */
const REFILL_SHARE = 4;
const REFILL_WAIT_MS = 5;

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
  readonly #tokens: Tokens;
  readonly #finishes: GroupCommit<AttemptFinish, boolean>;
  /** The queue's statements (claims, reclaims, the next due time) on a connection the worker may abandon. */
  readonly #queueLane: WriteLane;
  /** The finishes' statements, on a lane of their own: a claim waiting on the database holds up no answer's record. */
  readonly #finishLane: WriteLane;
  readonly #stall: Stall;
  readonly #finish = async (f: AttemptFinish) => {
    const kept = await this.#finishes.record(f);
    if (this.#mayHaveMadeWorkDue(f)) this.wake();
    return kept;
  };
  readonly #owner = `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
  /** Every attempt not yet recorded, the ones whose answer waits for its finish to commit included. */
  readonly #inFlight = new Set<Promise<void>>();
  /** Attempts still waiting for the downstream's answer: what `concurrency` bounds. */
  #sending = 0;
  #ticking: Promise<void> | null = null;
  #reclaimedAt = -Infinity;
  /** When the last claim looked, in database time. */
  #claimedAt: string | null = null;
  #lookedAt = performance.now();
  #again = false;
  #stopped = false;
  #timer: NodeJS.Timeout | undefined;
  #refillTimer: NodeJS.Timeout | undefined;
  /** The refill's wait is over: the next pass claims whatever is free. */
  #refillDue = false;
  /** Which claim goes first in the next pass (see #claim). */
  #turn = 0;
  /** The last claim found fewer due tasks than it had slots for: a freed slot has nothing to refill. */
  #drained = false;
  #unlisten: (() => Promise<void>) | undefined;
  /** Tells the other instances of a freed `maxInFlight` slot; null on embedded PGlite, which has no others. */
  readonly #slotNotices: SlotNotices | null;
  readonly #release = new AbortController();
  readonly #outage: OutageLog;

  constructor(deps: ForwarderDeps, options: Partial<ForwarderOptions> = {}) {
    this.#deps = deps;
    this.#options = { ...FORWARDER_DEFAULTS, ...options };
    this.#routes = new Routes(deps.config, this.#options.leaseGraceMs, this.#options.alertTimeoutMs);
    this.#pools = new Pools(this.#options.concurrency);
    // A connection gone silent would stop forwarding until TCP gives up (see WriteLane): the queue's statements
    // and the finishes each run on a lane of their own, abandoned after `limits.writeStallMs` without an answer.
    const stallMs = deps.config.limits.writeStallMs;
    this.#stall = {
      ms: stallMs,
      onStall: () => deps.logger.warn(`no answer from PostgreSQL in ${stallMs} ms: abandoning a worker connection for a new one`),
    };
    this.#outage = outageLog(deps.logger, {
      level: 'error',
      failing: 'the forwarder could not read its queue; trying again',
      recovered: 'the forwarder reads its queue again',
      // A failing pass waits a poll before the next: a line every five of them.
      repeatEveryMs: 5 * this.#options.pollMs,
    });
    this.#queueLane = deps.store.lane();
    // Attempts end at their own times; those ending while a finish commits are written together in the next.
    this.#finishLane = deps.store.lane();
    this.#finishes = new GroupCommit(this.#finishLane, finishAttempts, { maxBatch: FINISHES_PER_BATCH, stall: this.#stall });
    // Every attempt in flight listens for the release: as many listeners as the concurrency, by design.
    setMaxListeners(0, this.#release.signal);
    this.#tokens = new Tokens(this.#pools, this.#release.signal);
    // Embedded PGlite has one process (its data directory's lock), so one worker: its own finish wakes it (#run).
    this.#slotNotices = deps.store.kind === 'postgres' ? new SlotNotices(deps.store.db, this.#routes) : null;
  }

  async start(): Promise<void> {
    // onSubscribe fires after every (re)subscription: a notification sent while unsubscribed is caught up.
    this.#unlisten = await this.#deps.store.listen(TASKS_CHANNEL, () => this.wake(), () => this.wake());
  }

  /**
   * Whether the loop still turns: a pass ends at least every `pollMs`, so silence for several of them means
   * it is stuck (a pass hanging on the database shows as the database failing the readiness check first).
   */
  alive(): boolean {
    return performance.now() - this.#lookedAt < this.#options.pollMs * 3 + 5000;
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

  /**
   * Stops claiming and lets the attempts in flight finish — cutting one short would leave its outcome
   * unknown — for at most `graceMs`. Past it, each is cut short: a claim not yet sent is handed back, a
   * request already written ends as `outcome_unknown`, reconciled by the next worker and never resent blindly.
   */
  async stop(graceMs?: number): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#refillTimer);
    let graceTimer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<void>((resolve) => {
      if (graceMs !== undefined) graceTimer = setTimeout(resolve, graceMs);
    });
    // Closing the store ends the subscription anyway; a database that is down must not stop the rest.
    await this.#unlisten?.().catch(() => {});
    await this.#ticking;
    const attempts = Promise.allSettled([...this.#inFlight]);
    await Promise.race([attempts, graceOver]);
    clearTimeout(graceTimer);
    this.#release.abort();
    await attempts;
    await this.#slotNotices?.settled();
    await this.#pools.close();
    // A forwarder replaced by a reload stops long before the store closes: its connections go with it.
    await Promise.all([this.#queueLane.close(), this.#finishLane.close()]);
  }

  async #tick(): Promise<void> {
    let wait = this.#options.pollMs;
    try {
      do {
        this.#again = false;
        if (this.#refillWaits()) return;
        // The claim first: a task that just arrived is not kept waiting behind the look for expired leases.
        await this.#claim();
        await this.#reclaim();
      } while (this.#again && !this.#stopped);
      if (this.#freeSlots() > 0) {
        const due = await this.#onQueue((db) => nextDueInMs(db, this.#claimedAt, this.#routes.rateLimits));
        if (due !== null) wait = Math.max(MIN_WAIT_MS, Math.min(wait, Math.ceil(due)));
      }
    } catch (error) {
      this.#outage.failed(error);
    }
    this.#lookedAt = performance.now();
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.wake(), wait);
  }

  /** A statement on the queue's lane; its answer is what tells the outage log the database is back. */
  async #onQueue<T>(statement: (db: Db) => Promise<T>): Promise<T> {
    const answer = await onLane(this.#queueLane, this.#stall, statement(this.#queueLane.db));
    this.#outage.succeeded();
    return answer;
  }

  async #reclaim(): Promise<void> {
    if (performance.now() - this.#reclaimedAt < RECLAIM_EVERY_MS) return;
    this.#reclaimedAt = performance.now();
    const reclaimed = await this.#onQueue(reclaimExpiredLeases);
    // Reclaimed tasks are due at once: claim them in this pass.
    if (reclaimed.length > 0) this.#again = true;
    for (const task of reclaimed) {
      this.#deps.metrics.leasesReclaimed.inc();
      this.#deps.logger.warn({ task: task.id, source: task.source, action: task.action }, 'lease expired mid-attempt: outcome unknown');
    }
  }

  /**
   * A freed slot is refilled only while the queue may still hold due tasks. Once a claim came back short,
   * new work announces itself: ingest, approvals, replays, releases and resumes send a NOTIFY, this worker's
   * own finishes wake it when they schedule a retry or may unblock a step, and the poll covers the rest
   * (expired leases, cooldowns ending). Looking again after every answer anyway cost a claim and a look at
   * the next due time per task — on PGlite, where each holds the process, two thirds of its time.
   */
  #slotFreed(): void {
    if (!this.#drained) this.wake();
  }

  /** A finish that leaves its task to be tried again, or completes one a step waits for, makes work due. */
  #mayHaveMadeWorkDue(f: AttemptFinish): boolean {
    if (f.state === TASK_STATES.succeeded) return this.#routes.hasSteps;
    return f.state !== TASK_STATES.failed && f.state !== TASK_STATES.needsReview;
  }

  /** Whether to hold a small refill back for more slots to free (see REFILL_SHARE); arms its deadline if so. */
  #refillWaits(): boolean {
    const free = this.#freeSlots();
    const enough = Math.max(1, Math.floor(this.#options.concurrency / REFILL_SHARE));
    if (free <= 0 || free >= enough || this.#sending === 0 || this.#refillDue) return false;
    this.#refillTimer ??= setTimeout(() => {
      this.#refillTimer = undefined;
      this.#refillDue = true;
      this.wake();
    }, REFILL_WAIT_MS);
    return true;
  }

  /**
   * A slot frees as soon as the downstream has answered: the finish is written in a group commit meanwhile,
   * so its commit does not hold a request slot. Answers waiting for their finish are bounded too.
   */
  #freeSlots(): number {
    const { concurrency } = this.#options;
    return Math.min(concurrency - this.#sending, 2 * concurrency - this.#inFlight.size);
  }

  async #claim(): Promise<void> {
    if (this.#freeSlots() <= 0 || this.#stopped) return;
    this.#refillDue = false;
    // A claim abandoned after it committed leaves its tasks leased, their claims noted: the leases expire and
    // are reclaimed as unknown outcomes, never sent blindly.
    const claims: ((limit: number) => Promise<readonly ClaimedTask[]>)[] = [
      async (limit) => {
        const { tasks, at } = await this.#onQueue((db) => claimTasks(db, { owner: this.#owner, routes: this.#routes.forClaim, limit }));
        this.#claimedAt = at;
        return tasks;
      },
      // The actions a destination limits: a group held by its limit comes back short, and its tasks wait for a slot
      // this worker's own finishes free (they wake it) or the next token (nextDueInMs).
      ...this.#routes.limitedGroups.map(
        (group) => (limit: number) => this.#onQueue((db) => claimLimited(db, { owner: this.#owner, routes: group.routes, limits: group.limits, limit })),
      ),
    ];
    // Each claim takes the slots the ones before it left, so they take turns at going first: always first, the claim of
    // the actions no destination limits took every slot while they had a backlog, and a limited action's task waited
    // for all of it though its origin had every slot and token free.
    const first = this.#turn++ % claims.length;
    let full = false;
    for (let i = 0; i < claims.length; i++) {
      const free = this.#freeSlots();
      if (free <= 0 || this.#stopped) {
        full = true;
        break;
      }
      const claimed = await claims[(first + i) % claims.length]!(free);
      full ||= claimed.length === free;
      this.#run(claimed);
    }
    this.#drained = !full;
    if (full) this.#again = true;
  }

  /** A finish that wakes this worker once committed and, when it frees a `maxInFlight` slot, the other instances'. */
  #lettingGo(task: ClaimedTask, route: Route): (f: AttemptFinish) => Promise<boolean> {
    const origin = task.mode === CLAIM_MODES.lookup ? route.lookup!.destination : route.destination;
    const notices = this.#slotNotices?.tells(origin) ? this.#slotNotices : null;
    return (f) =>
      this.#finish(f).finally(() => {
        this.wake();
        notices?.freed(origin);
      });
  }

  #run(claimed: readonly ClaimedTask[]): void {
    for (const task of claimed) {
      if (task.mode === CLAIM_MODES.review) {
        this.#deps.metrics.taskTransitions.inc({ source: task.source, action: task.action, state: TASK_STATES.needsReview });
        this.#deps.logger.warn({ task: task.id, source: task.source, action: task.action }, task.reason ?? 'needs review');
        continue;
      }
      const route = this.#routes.get(task.source, task.action);
      const { store, logger, metrics } = this.#deps;
      this.#sending++;
      let slotFreed = false;
      const freeSlot = () => {
        if (slotFreed) return;
        slotFreed = true;
        this.#sending--;
        this.#slotFreed();
      };
      // A finish that frees a limited origin's slot may let a task that waited for it go; so may an alert message's,
      // the next of its condition (src/store/atomic/alerts.ts), and an ordered action's, the next of its key, which
      // the database releases without a NOTIFY. Not every success wakes the worker: a claim per answer was most of
      // PGlite's time.
      const mayLetGo = route.limited || task.source === ALERTS_SOURCE || route.config.order !== undefined;
      const finish = mayLetGo ? this.#lettingGo(task, route) : this.#finish;
      const deps = {
        db: store.db,
        pools: this.#pools,
        tokens: this.#tokens,
        owner: this.#owner,
        finish,
        answered: freeSlot,
        logger,
        metrics,
        release: this.#release.signal,
      };
      const running: Promise<void> = runAttempt(task, route, deps).finally(() => {
        this.#inFlight.delete(running);
        freeSlot();
        this.#slotFreed();
      });
      this.#inFlight.add(running);
    }
  }
}
