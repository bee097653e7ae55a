import type { Logger } from '../log.ts';
import { addRejections, type RejectionSample } from './atomic/rejections.ts';
import type { Store, WriteLane } from './connect.ts';
import { onLane, type Stall } from './lane.ts';

/** How often a process adds what it counted: a person looking for a refused sender waits seconds, not minutes. */
const FLUSH_EVERY_MS = 10_000;

/** Samples kept per source and reason, here and in the table. */
export const SAMPLES_KEPT = 5;

/** Minutes of counts kept, here while the database is away and in the table. */
export const MINUTES_KEPT = 24 * 60;

/** Pairs of source and reason counted apart at most; the rest are counted as `other`. */
const MOST_PAIRS = 1000;

/** Header names kept of a sample, and characters of each: the names are the sender's to choose. */
const MOST_HEADER_NAMES = 40;
const HEADER_NAME_CHARACTERS = 64;

const MINUTE_MS = 60_000;

/** What a refused request leaves: when, from where, and the names of its headers; never a value or a byte of the body. */
export interface RefusedRequest {
  remoteAddress: string | null;
  headerNames: readonly string[];
}

/**
 * Counts the requests ingest refused, per source, reason and minute, with the latest few of each pair as samples, and
 * adds them to the database every few seconds: one statement per flush whatever the rate, so a flood of refused
 * requests costs the database nothing per request, and its rows stay within sources × reasons × minutes kept.
 * Several instances' counts add up (rejection_counts).
 */
export class RejectionLog {
  /** `minute\nsource\nreason` → count. */
  readonly #counts = new Map<string, number>();
  /** `source\nreason` → the newest samples, oldest first. */
  readonly #samples = new Map<string, RejectionSample[]>();
  readonly #lane: WriteLane;
  readonly #stall: Stall;
  readonly #logger: Logger;
  readonly #timer: ReturnType<typeof setInterval>;
  #flushing: Promise<void> = Promise.resolve();
  /** Flushes asked for and not yet done: a tick that finds one skips, so a stalled database queues none. */
  #unfinished = 0;

  constructor(store: Store, logger: Logger, stallMs: number, flushEveryMs = FLUSH_EVERY_MS) {
    // A connection of its own, given up when it goes silent, as ingest's is.
    this.#lane = store.lane();
    this.#stall = { ms: stallMs, onStall: () => logger.warn(`no answer from PostgreSQL in ${stallMs} ms: abandoning the refusal counts' connection`) };
    this.#logger = logger;
    this.#timer = setInterval(() => {
      if (this.#unfinished === 0) this.flush().catch((error: unknown) => this.#failed(error));
    }, flushEveryMs);
    this.#timer.unref();
  }

  note(source: string, reason: string, request: RefusedRequest, at = Date.now()): void {
    const pair = this.#pairOf(source, reason);
    const key = `${Math.floor(at / MINUTE_MS) * MINUTE_MS}\n${pair}`;
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
    const samples = this.#samples.get(pair) ?? [];
    const [counted, as] = pair.split('\n') as [string, string];
    samples.push({
      source: counted,
      reason: as,
      at: new Date(at).toISOString(),
      remoteAddress: request.remoteAddress,
      headerNames: request.headerNames.slice(0, MOST_HEADER_NAMES).map((name) => name.slice(0, HEADER_NAME_CHARACTERS)),
    });
    if (samples.length > SAMPLES_KEPT) samples.shift();
    this.#samples.set(pair, samples);
  }

  /** Adds what is counted now, after any flush in progress: what a test or a stop needs. */
  flush(): Promise<void> {
    this.#unfinished++;
    const next = this.#flushing.then(() => this.#write()).finally(() => this.#unfinished--);
    this.#flushing = next.catch(() => {});
    return next;
  }

  /** Stops, writing what is counted first. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.flush().catch((error: unknown) => this.#failed(error));
  }

  // A reason is one of ingest's codes, and a source one of the config's or `(unknown)`: the cap is a guard, not a rule.
  #pairOf(source: string, reason: string): string {
    const pair = `${source}\n${reason}`;
    return this.#samples.has(pair) || this.#samples.size < MOST_PAIRS ? pair : `${source}\nother`;
  }

  #failed(error: unknown): void {
    this.#logger.warn({ err: error }, 'adding the counts of refused requests failed; they are tried again');
  }

  async #write(): Promise<void> {
    if (this.#counts.size === 0) return;
    const counts = [...this.#counts].map(([key, count]) => {
      const [minute, source, reason] = key.split('\n') as [string, string, string];
      return { minute: new Date(Number(minute)).toISOString(), source, reason, count };
    });
    const samples = [...this.#samples.values()].flat();
    this.#counts.clear();
    this.#samples.clear();
    try {
      await onLane(this.#lane, this.#stall, addRejections(this.#lane.db, counts, samples, { samplesKept: SAMPLES_KEPT, minutesKept: MINUTES_KEPT }));
    } catch (error) {
      // Counted again at the next flush rather than lost while the database is away; minutes past those kept go.
      const oldest = Date.now() - MINUTES_KEPT * MINUTE_MS;
      for (const { minute, source, reason, count } of counts) {
        if (Date.parse(minute) < oldest) continue;
        const key = `${Date.parse(minute)}\n${source}\n${reason}`;
        this.#counts.set(key, (this.#counts.get(key) ?? 0) + count);
      }
      for (const sample of samples) {
        const pair = `${sample.source}\n${sample.reason}`;
        // Older than any noted since: before them, and the newest few kept.
        const newer = this.#samples.get(pair) ?? [];
        const older = samples.filter((s) => `${s.source}\n${s.reason}` === pair);
        if (!newer.includes(older[0]!)) this.#samples.set(pair, [...older, ...newer].slice(-SAMPLES_KEPT));
      }
      throw error;
    }
  }
}
