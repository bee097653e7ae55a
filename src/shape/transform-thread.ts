import { createRequire } from 'node:module';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { fail, type Shaped } from './transform-result.ts';

/**
 * Where transforms are evaluated: one long-lived worker thread (transform-worker.ts), terminated and replaced when
 * an evaluation runs past the time limit. The evaluations asked for in one turn of the event loop — ingest answers
 * many deliveries at once — go to it as one message, and come back as one.
 *
 * Measured on 2026-12-02, two cores shared with other sessions. CPU per evaluation, the process's (the main thread's
 * share in brackets), from scripts/transform-cost.ts, one at a time / 32 at once:
 *   node:vm's `timeout`, a call per evaluation (before)        42–80 (34–59) / 44–81 (34–54) µs
 *   the same, a turn's evaluations in one call, one timeout   43–79 (36–56) / 22–26 (18–23) µs
 *   this thread, a message per evaluation                     48–59 (15–19) / 43–64 (12–20) µs
 *   this thread, a message per turn                           51–102 (16–37) / 20–24 (3–3.5) µs
 *   JSONata in the main thread, no limit                      14–18 (12–15) / 17–20 (14–17) µs
 * and at ingest (`npm run bench -- --only ingest-shaped --duration 10`, the machine 95–100 % busy, alternating), the
 * gateway's CPU per delivery beyond plain ingest's: one call per evaluation +312 and +321 µs; one call per turn
 * +67, +119 and +162 µs (263–454 µs a delivery: it pays the watchdog thread per batch, and over two in five
 * batches held a single evaluation); this thread +66 and +103 µs (233–261 µs), and +60 and +65 µs in two later
 * runs. The thread costs the least, and leaves the event loop a sixth of what batching does: JSONata runs beside
 * it, not on it.
 *
 * The limit is each evaluation's own, from when the thread begins it, read from memory the thread shares: a slow
 * evaluation within it never fails the others, and an answer that waited on a busy event loop is no overrun.
 * `terminate` stops the thread in the middle of a built-in call as node:vm's watchdog did; only the evaluation that
 * overran fails, and the others the thread held go to its replacement.
 */
export interface ThreadLimits {
  timeMs: number;
  depth: number;
  resultBytes: number;
}
export type Job = { id: number; source: string; input: unknown; bindings: object };
export type Answer = { id: number; shaped: Shaped };
export interface WorkerData {
  port: MessagePort;
  /** Two slots: the ID of the job in progress (-1 for none), and when it began (process.hrtime, ns). */
  progress: SharedArrayBuffer;
  depth: number;
  resultBytes: number;
}

type Asked = { job: Job; resolve: (shaped: Shaped) => void };
type Running = { thread: Worker; port: MessagePort; inProgress: BigInt64Array };

// From the sources (tsx, vitest) the worker is TypeScript, which a new thread's Node cannot load without tsx. Loaded
// with tsx's require hooks, in the thread itself: its import hooks run in one more thread of their own, which held
// 30–39 MiB more of the gateway's memory (npm start, idle after a transform: 301–307 MiB against 268–271).
const WORKER = new URL(`./transform-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url).href;
const BOOT = `const { workerData } = require('node:worker_threads');
if (workerData.tsx) {
  require(workerData.tsx).register();
  require(require('node:url').fileURLToPath(workerData.worker));
} else {
  import(workerData.worker);
}`;

export class TransformThread {
  readonly #limits: ThreadLimits;
  #nextId = 0;
  /** Asked for in this turn of the event loop. */
  #asked: Asked[] = [];
  /** Sent to the thread and not yet answered, in the order sent: the order it evaluates them. */
  readonly #sent = new Map<number, Asked>();
  #running: Running | undefined;
  #watchdog: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(limits: ThreadLimits) {
    this.#limits = limits;
  }

  evaluate(source: string, input: unknown, bindings: object): Promise<Shaped> {
    return new Promise((resolve) => {
      if (this.#asked.length === 0) setImmediate(() => this.#send(this.#asked.splice(0)));
      this.#asked.push({ job: { id: this.#nextId++, source, input, bindings }, resolve });
    });
  }

  /** Ends the thread; what it held, and what is asked from now on, fails. For tests: the gateway's lives as long as it. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#watchdog);
    const running = this.#running;
    this.#running = undefined;
    this.#fail([...this.#asked.splice(0), ...this.#sent.values()], 'the transform thread was closed');
    this.#sent.clear();
    if (running) {
      running.port.close();
      await running.thread.terminate();
    }
  }

  #fail(asked: Asked[], error: string): void {
    for (const { resolve } of asked) resolve(fail(error));
  }

  #send(asked: Asked[]): void {
    if (this.#closed) return this.#fail(asked, 'the transform thread was closed');
    const running = (this.#running ??= this.#start());
    try {
      running.port.postMessage(asked.map(({ job }) => job));
    } catch (error) {
      return this.#fail(asked, `the transform's input could not be sent to its thread: ${String(error)}`);
    }
    for (const one of asked) this.#sent.set(one.job.id, one);
    this.#watch(this.#limits.timeMs);
  }

  #start(): Running {
    const { port1, port2 } = new MessageChannel();
    const progress = new SharedArrayBuffer(2 * BigInt64Array.BYTES_PER_ELEMENT);
    const inProgress = new BigInt64Array(progress);
    inProgress[0] = -1n;
    const workerData: WorkerData = { port: port2, progress, depth: this.#limits.depth, resultBytes: this.#limits.resultBytes };
    const tsx = WORKER.endsWith('.ts') ? createRequire(import.meta.url).resolve('tsx/cjs/api') : null;
    const thread = new Worker(BOOT, {
      eval: true,
      workerData: { ...workerData, worker: WORKER, tsx },
      transferList: [port2],
      // No `resourceLimits`: its heap cap is not kept by a single large allocation, and then the whole process aborts
      // (nodejs/node#47224, open): `$count([1..10000000].[1..10000000])` under a 128 MiB cap ended the gateway, and
      // under 512 MiB with a 5 s limit. The thread's default heap is the main thread's (~4 GiB here), as before.
    });
    const running: Running = { thread, port: port1, inProgress };
    port1.on('message', (answers: Answer[]) => this.#answer(answers));
    thread.on('error', (error) => this.#died(running, error));
    thread.on('exit', (code) => this.#died(running, new Error(`the transform's thread exited with code ${code}`)));
    // Neither keeps the process alive: the watchdog does, while anything is sent and unanswered.
    port1.unref();
    thread.unref();
    return running;
  }

  #answer(answers: Answer[]): void {
    for (const { id, shaped } of answers) {
      const asked = this.#sent.get(id);
      this.#sent.delete(id);
      asked?.resolve(shaped);
    }
  }

  #watch(delayMs: number): void {
    this.#watchdog ??= setTimeout(() => {
      this.#watchdog = undefined;
      this.#check();
    }, delayMs);
  }

  /** Reads the thread's progress: answers that came while the event loop was busy are no overrun. */
  #check(): void {
    const running = this.#running;
    if (!running) return;
    for (let received; (received = receiveMessageOnPort(running.port)); ) this.#answer(received.message as Answer[]);
    if (this.#sent.size === 0) return;
    const id = Number(Atomics.load(running.inProgress, 0));
    const ranMs = Number(process.hrtime.bigint() - Atomics.load(running.inProgress, 1)) / 1e6;
    const { timeMs } = this.#limits;
    if (!this.#sent.has(id)) return this.#watch(timeMs); // between jobs, or the thread still starting
    if (ranMs < timeMs) return this.#watch(timeMs - ranMs);
    this.#replace(running, id, `the transform ran longer than ${timeMs} ms and was stopped: an endless loop?`);
  }

  /** The job in progress fails with `error`; the thread is terminated, and the other jobs it held go to a new one. */
  #replace(running: Running, culprit: number, error: string): void {
    this.#running = undefined;
    running.port.close();
    void running.thread.terminate();
    const again: Asked[] = [];
    for (const asked of this.#sent.values()) {
      if (asked.job.id === culprit) asked.resolve(fail(error));
      else again.push(asked);
    }
    this.#sent.clear();
    if (again.length > 0) this.#send(again);
  }

  /** A fault of the thread's own: the job in progress is to blame; with none, every job it held fails. */
  #died(running: Running, error: Error): void {
    if (this.#running !== running) return; // terminated by #replace, or already handled its 'error'
    for (let received; (received = receiveMessageOnPort(running.port)); ) this.#answer(received.message as Answer[]);
    const id = Number(Atomics.load(running.inProgress, 0));
    const why = `the transform's thread failed: ${error.message}`;
    if (this.#sent.has(id)) return this.#replace(running, id, why);
    this.#running = undefined;
    running.port.close();
    this.#fail([...this.#sent.values()], why);
    this.#sent.clear();
  }
}
