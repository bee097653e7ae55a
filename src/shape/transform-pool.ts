import { Evaluator, LATE, type EvaluatorLimits, type Pending } from './evaluator.ts';
import { fail, type Shaped } from './transform-result.ts';

/**
 * Where transforms are evaluated: a few child processes (evaluator.ts), shared by the sources fairly. Each source has
 * a queue of its own, and holds at most one evaluator at a time — a job in progress, or the replacement of a child
 * its transform made the gateway kill, until that replacement is ready. A free evaluator takes the next source in
 * turn with jobs waiting, and all that source's jobs asked so far (a turn of the event loop's, for ingest answers
 * many deliveries at once), up to `BATCH`. So with two evaluators one source's endless loops, however many, leave
 * the other evaluator to every other source; more slow sources than evaluators share them in turn.
 *
 * Why not a process per source: processes cost memory (~40 MiB each before any heap), and a thread per source
 * cannot keep a memory limit (evaluator.ts). A pool bounds both by its size; the gateway starts a child per source
 * with transforms, up to the size (`warm`), and a killed one is replaced at once.
 *
 * A job may have a deadline to start by: its delivery's answer must leave in time. One that cannot start by then is
 * answered `late` — at once, when the source's own queue already holds more than its recent evaluations took in
 * that time; else when the deadline passes in the queue, or in the child — and its delivery is answered 503 with
 * Retry-After. Only that source's: its queue is the only one in front of its jobs.
 */
export interface PoolLimits extends EvaluatorLimits {
  /** Child processes at most. */
  evaluators: number;
}

/** Jobs of one source sent to an evaluator in one message. */
const BATCH = 64;
/** The weight of the newest measurement in a source's cost per job. */
const COST_WEIGHT = 0.3;

type Queued = Pending & { owner: string; startBy: number; timer?: NodeJS.Timeout };
interface Slot {
  evaluator: Evaluator | null;
  /** The source whose jobs it runs, or whose killed child's replacement is starting. */
  holder: string | null;
  heldSince: number;
  jobs: number;
}

export class TransformPool {
  readonly #limits: PoolLimits;
  readonly #slots: Slot[];
  readonly #queues = new Map<string, Queued[]>();
  /** Sources with jobs queued, in the order they are served. */
  #turn: string[] = [];
  /** Each source's recent milliseconds of an evaluator per job, replacement included. */
  readonly #cost = new Map<string, number>();
  #nextId = 0;
  #pumping = false;
  #closed = false;

  constructor(limits: PoolLimits) {
    this.#limits = limits;
    this.#slots = Array.from({ length: limits.evaluators }, () => ({ evaluator: null, holder: null, heldSince: 0, jobs: 0 }));
  }

  /**
   * Starts children ahead of the first transforms, one for each source that has some, up to the pool's size: so that
   * no delivery waits for a process to start, the first of another source's included.
   */
  async warm(sources: number): Promise<void> {
    const slots = this.#slots.slice(0, Math.max(1, sources));
    for (const slot of slots) if (!slot.evaluator && !this.#closed) slot.evaluator = this.#start(slot);
    await Promise.all(slots.map((slot) => slot.evaluator?.started));
  }

  /** `startBy`: the latest `performance.now()` the evaluation may begin at. */
  evaluate(owner: string, expression: string, input: unknown, bindings: object, startBy = Infinity): Promise<Shaped> {
    if (this.#closed) return Promise.resolve(fail('the transform processes were closed'));
    const waitMs = this.#expectedWait(owner);
    if (performance.now() + waitMs > startBy) return Promise.resolve(late());
    return new Promise((resolve) => {
      const queued: Queued = { owner, startBy, job: { id: this.#nextId++, expression, input, bindings, startBy: Infinity }, resolve };
      this.#enqueue([queued], false);
      if (!this.#pumping) {
        this.#pumping = true;
        setImmediate(() => {
          this.#pumping = false;
          this.#pump();
        });
      }
    });
  }

  /** Ends every child; what is queued or held, and what is asked from now on, fails. For tests. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const queue of this.#queues.values()) for (const queued of queue.splice(0)) this.#settle(queued, fail('the transform processes were closed'));
    this.#queues.clear();
    this.#turn = [];
    for (const slot of this.#slots) slot.evaluator?.kill('the transform processes were closed');
  }

  #expectedWait(owner: string): number {
    const ahead = (this.#queues.get(owner)?.length ?? 0) + (this.#slots.some((slot) => slot.holder === owner) ? 1 : 0);
    return ahead * (this.#cost.get(owner) ?? 0);
  }

  #enqueue(jobs: Queued[], front: boolean): void {
    if (jobs.length === 0) return;
    const owner = jobs[0]!.owner;
    let queue = this.#queues.get(owner);
    if (!queue) this.#queues.set(owner, (queue = []));
    if (front) queue.unshift(...jobs);
    else queue.push(...jobs);
    for (const queued of jobs) {
      if (queued.timer || !Number.isFinite(queued.startBy)) continue;
      queued.timer = setTimeout(() => this.#expire(queued), Math.max(0, queued.startBy - performance.now()));
    }
    if (!this.#turn.includes(owner)) this.#turn.push(owner);
  }

  #expire(queued: Queued): void {
    const queue = this.#queues.get(queued.owner);
    const at = queue?.indexOf(queued) ?? -1;
    if (at < 0) return;
    queue!.splice(at, 1);
    if (queue!.length === 0) this.#forget(queued.owner);
    this.#settle(queued, late());
  }

  #forget(owner: string): void {
    this.#queues.delete(owner);
    this.#turn = this.#turn.filter((one) => one !== owner);
  }

  #settle(queued: Queued, shaped: Shaped): void {
    clearTimeout(queued.timer);
    queued.resolve(shaped);
  }

  #pump(): void {
    while (!this.#closed) {
      const slot = this.#freeSlot();
      const owner = this.#turn.find((one) => !this.#slots.some((held) => held.holder === one));
      if (!slot || owner === undefined) return;
      const queue = this.#queues.get(owner)!;
      const batch = queue.splice(0, BATCH);
      this.#turn = this.#turn.filter((one) => one !== owner);
      if (queue.length > 0) this.#turn.push(owner);
      else this.#queues.delete(owner);
      this.#dispatch(slot, owner, batch);
    }
  }

  /** A ready child first, then one starting, then a slot with none yet. */
  #freeSlot(): Slot | undefined {
    const free = this.#slots.filter((slot) => slot.holder === null);
    return free.find((slot) => slot.evaluator?.ready) ?? free.find((slot) => slot.evaluator) ?? free[0];
  }

  #dispatch(slot: Slot, owner: string, batch: Queued[]): void {
    const [now, wall] = [performance.now(), Date.now()];
    for (const queued of batch) {
      clearTimeout(queued.timer);
      queued.timer = undefined;
      // The child reads the wall clock: this process's monotonic one means nothing there.
      queued.job.startBy = wall + (queued.startBy - now);
    }
    Object.assign(slot, { holder: owner, heldSince: now, jobs: batch.length });
    const evaluator = (slot.evaluator ??= this.#start(slot));
    evaluator.run(batch, (leftover, died) => {
      if (this.#closed) {
        for (const queued of leftover as Queued[]) this.#settle(queued, fail('the transform processes were closed'));
        return;
      }
      this.#enqueue(leftover as Queued[], true);
      slot.jobs -= leftover.length;
      // A killed child's slot stays its source's until the replacement is ready: the source's share includes it.
      if (died) slot.evaluator = this.#start(slot);
      else this.#release(slot);
    });
  }

  #release(slot: Slot): void {
    const owner = slot.holder;
    if (owner === null) return;
    const perJob = (performance.now() - slot.heldSince) / Math.max(1, slot.jobs);
    const before = this.#cost.get(owner);
    this.#cost.set(owner, before === undefined ? perJob : before + COST_WEIGHT * (perJob - before));
    slot.holder = null;
    this.#pump();
  }

  #start(slot: Slot): Evaluator {
    const evaluator: Evaluator = new Evaluator(this.#limits, {
      onReady: () => {
        // The replacement of a child its holder's transform had killed: the holder's share is free again.
        if (slot.evaluator === evaluator && !evaluator.busy) this.#release(slot);
      },
      onGone: () => {
        if (slot.evaluator !== evaluator) return;
        slot.evaluator = null;
        if (evaluator.busy) return; // its batch's `done` follows, and decides
        // An idle child gone, or a replacement that never started: nothing is charged to anyone any more.
        slot.holder = null;
        if (!this.#closed) this.#pump();
      },
    });
    return evaluator;
  }
}

const late = (): Shaped => ({ ok: false, error: LATE, late: true });
