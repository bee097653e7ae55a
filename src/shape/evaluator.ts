import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { fail, type Shaped } from './transform-result.ts';

/**
 * One transform process (transform-child.ts): a child of the gateway's, not a thread of it, because only a process
 * keeps a memory limit without risking the gateway. A worker thread's `resourceLimits` is kept by ending the whole
 * process when one allocation passes it (nodejs/node#47224, open): measured on Node 20.20 with a 64 MiB cap,
 * `$count([1..10000000])` and `$join([1..10000000].$string(), ",")` aborted the gateway, and only
 * `$count([1..3000000].{"a": $})` was stopped as a worker should be. A child started with `--max-old-space-size`
 * that passes its limit ends itself alone; the evaluation it held fails, and a new child replaces it.
 *
 * The time limit is each evaluation's own: the child says when a batch has arrived and answers each job when it is
 * done, and each job is timed from the one of those before it. Transfers are no part of it: a batch's to the child,
 * and a large body's back, which the child announces (`evaluated`) before sending it. An answer read late because the event loop was
 * busy only makes the next job's limit later, never sooner: the check runs after the event loop has read what
 * arrived. A child past the limit is killed (SIGKILL stops it in the middle of a built-in call too).
 */
export interface EvaluatorLimits {
  timeMs: number;
  depth: number;
  resultBytes: number;
  /** The child's V8 old-generation heap: `--max-old-space-size`. */
  memoryMb: number;
}
export type ChildJob = { id: number; expression: string; input: unknown; bindings: object; startBy: number };
export type ChildAnswer = { id: number; shaped: Shaped } | { id: number; late: true };
type ChildMessage = ChildAnswer | { ready: true } | { began: true } | { evaluated: number };
/** A job as the pool holds it: answered through `resolve`, exactly once. */
export interface Pending {
  job: ChildJob;
  resolve(shaped: Shaped): void;
}
/** Why a job was answered without a body although it never ran: it could not start in time. */
export const LATE = 'the transform could not start before the delivery had to be answered';

// From the sources (tsx, vitest) the child is TypeScript, which a new Node cannot load without tsx: registered by a
// line of CommonJS, as tsx's import hooks would run in one more thread of the child's own.
const CHILD = new URL(`./transform-child${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);
const BOOT = 'const [tsx, child] = process.argv.slice(1); require(tsx).register(); require(child);';
/** How long a child may take to start, many times what it takes on a busy machine. */
const START_MS = 30_000;
/** How long a batch may take to reach its child, or a body to come back: many times what even the largest needs. */
const TRANSFER_MS = 5000;
/** How much of a child's last words its failure quotes. */
const STDERR_TAIL = 2048;

export class Evaluator {
  readonly #limits: EvaluatorLimits;
  readonly #child: ChildProcess;
  #ready = false;
  #gone = false;
  /** Sent and not yet answered, in the order the child evaluates them. */
  #held: Pending[] = [];
  /** When the job in progress began, as far as this process can tell: the previous answer, or the child's start. */
  #since = 0;
  /** Whether the child is evaluating, or something is on its way between the processes. */
  #evaluating = false;
  #watchdog: NodeJS.Timeout | undefined;
  #stderr = '';
  #killedFor: string | undefined;
  #done: ((leftover: Pending[], died: boolean) => void) | undefined;
  #onReady: () => void;
  #onGone: () => void;
  /** Settles once the child can evaluate, or has ended without being able to. */
  readonly started: Promise<void>;
  #started!: () => void;

  /** `onReady` once the child can evaluate; `onGone` once it has exited, before what it held is answered or handed back. */
  constructor(limits: EvaluatorLimits, events: { onReady: () => void; onGone: () => void }) {
    this.#limits = limits;
    this.#onReady = events.onReady;
    this.#onGone = events.onGone;
    this.started = new Promise((resolve) => (this.#started = resolve));
    const ts = CHILD.pathname.endsWith('.ts');
    const args = ts ? ['-e', BOOT, createRequire(import.meta.url).resolve('tsx/cjs/api'), fileURLToPath(CHILD)] : [fileURLToPath(CHILD)];
    this.#child = spawn(process.execPath, [`--max-old-space-size=${limits.memoryMb}`, '--max-semi-space-size=2', ...args], {
      // Nothing of the gateway's environment (its secrets) reaches the child: only what it needs.
      env: { ONCEHOOK_TRANSFORM_DEPTH: String(limits.depth), ONCEHOOK_TRANSFORM_RESULT_BYTES: String(limits.resultBytes) },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'advanced',
    });
    this.#child.stderr!.setEncoding('utf8').on('data', (text: string) => (this.#stderr = (this.#stderr + text).slice(-STDERR_TAIL)));
    this.#child.on('message', (message: ChildMessage) => this.#message(message));
    this.#child.on('exit', (code, signal) => this.#exited(code, signal));
    this.#child.on('error', () => {}); // a failed spawn exits too, and is answered there
    // None keeps the gateway alive: the watchdog does, while a job is held.
    this.#child.unref();
    this.#child.channel?.unref();
    (this.#child.stderr as unknown as { unref?: () => void }).unref?.();
  }

  get ready(): boolean {
    return this.#ready && !this.#gone;
  }

  /** Running a batch: from `run` until its `done`. */
  get busy(): boolean {
    return this.#done !== undefined;
  }

  /**
   * Evaluates `batch` in order, then calls `done`: with `died` when the child was killed or ended meanwhile, and
   * with what it left unanswered, to be run again by another.
   */
  run(batch: Pending[], done: (leftover: Pending[], died: boolean) => void): void {
    this.#held = batch;
    this.#done = done;
    if (this.#ready) return this.#send();
    // Still starting: a child that never gets ready is killed, and what it holds fails, rather than waiting for ever.
    this.#since = performance.now();
    this.#watch(START_MS);
  }

  /** Ends the child; with `reason`, what it holds fails with it, else it is handed back unanswered. */
  kill(reason?: string): void {
    this.#killedFor ??= reason;
    this.#child.kill('SIGKILL');
  }

  #send(): void {
    try {
      this.#child.send(this.#held.map(({ job }) => job));
    } catch (error) {
      const held = this.#held.splice(0);
      for (const { resolve } of held) resolve(fail(`the transform's input could not be sent to its process: ${String(error)}`));
      return this.#finish([], false);
    }
    this.#clock(false);
  }

  #clock(evaluating: boolean): void {
    this.#since = performance.now();
    this.#evaluating = evaluating;
    this.#watch(evaluating ? this.#limits.timeMs : TRANSFER_MS);
  }

  #message(message: ChildMessage): void {
    if ('began' in message) return this.#clock(true);
    if ('evaluated' in message) return this.#clock(false);
    if ('ready' in message) {
      this.#ready = true;
      this.#started();
      this.#onReady();
      if (this.#held.length > 0) this.#send();
      return;
    }
    const at = this.#held.findIndex(({ job }) => job.id === message.id);
    if (at < 0) return;
    const [answered] = this.#held.splice(at, 1);
    answered!.resolve('late' in message ? { ok: false, error: LATE, late: true } : message.shaped);
    if (this.#held.length === 0) this.#finish([], false);
    else this.#clock(true);
  }

  #finish(leftover: Pending[], died: boolean): void {
    clearTimeout(this.#watchdog);
    this.#watchdog = undefined;
    const done = this.#done;
    this.#done = undefined;
    done?.(leftover, died);
  }

  #watch(delayMs: number): void {
    clearTimeout(this.#watchdog);
    // After the event loop's next read: answers that arrived while it was busy are counted before judging.
    this.#watchdog = setTimeout(() => setImmediate(() => this.#check()), delayMs);
  }

  #check(): void {
    if (this.#held.length === 0 || this.#gone) return;
    const ranMs = performance.now() - this.#since;
    if (!this.#ready) return ranMs < START_MS ? this.#watch(START_MS - ranMs) : this.kill(`the transform's process did not start within ${START_MS} ms`);
    const limitMs = this.#evaluating ? this.#limits.timeMs : TRANSFER_MS;
    if (ranMs < limitMs) return this.#watch(limitMs - ranMs);
    const [culprit, ...rest] = this.#held;
    this.#held = [];
    culprit!.resolve(
      fail(this.#evaluating ? `the transform ran longer than ${limitMs} ms and was stopped: an endless loop?` : `the transform's input or body took longer than ${limitMs} ms between processes`),
    );
    this.kill();
    this.#finish(rest, true);
  }

  #exited(code: number | null, signal: NodeJS.Signals | null): void {
    this.#gone = true;
    this.#started();
    this.#onGone();
    const held = this.#held.splice(0);
    if (held.length === 0) return this.#finish([], true);
    if (this.#killedFor !== undefined) {
      for (const { resolve } of held) resolve(fail(this.#killedFor));
      return this.#finish([], true);
    }
    if (!this.#ready) {
      const words = this.#stderr.trim().split('\n').slice(-3).join(' ');
      for (const { resolve } of held) resolve(fail(`the transform's process did not start (${signal ?? `exit code ${code}`}): ${words}`));
      return this.#finish([], true);
    }
    // V8 aborts a process past its heap limit: the job in progress is to blame, the others are run again.
    const outOfMemory = signal === 'SIGABRT' || /heap out of memory|allocation failed/i.test(this.#stderr);
    held[0]!.resolve(
      fail(
        outOfMemory
          ? `the transform used more than its ${this.#limits.memoryMb} MiB of memory and was stopped`
          : `the transform's process ended (${signal ?? `exit code ${code}`}) while evaluating it`,
      ),
    );
    this.#finish(held.slice(1), true);
  }
}
