import { sql } from 'drizzle-orm';
import type { SignatureCheck } from '../errors.ts';
import type { Logger } from '../log.ts';
import { periodic } from '../periodic.ts';
import type { Store, WriteLane } from '../store/connect.ts';
import { onLane, type Stall } from '../store/lane.ts';
import { batchJson, rowsOf } from '../store/rows.ts';

/** How often a process writes the 401s it answered: an alert about a rotated secret is minutes, not seconds. */
const FLUSH_EVERY_MS = 5000;

/**
 * Counts the deliveries a process answered 401, per source and failed check, and writes the counts every few
 * seconds: one short insert per flush whatever the rate, so a flood of forged requests costs the database nothing
 * per request. The alert watcher sums them across every instance (signature_failures).
 */
export class SignatureFailureLog {
  readonly #counts = new Map<string, number>();
  readonly #lane: WriteLane;
  readonly #stall: Stall;
  readonly #logger: Logger;
  readonly #flusher;

  constructor(store: Store, logger: Logger, stallMs: number, flushEveryMs = FLUSH_EVERY_MS) {
    // A connection of its own, given up when it goes silent, as ingest's is: the pool's would be held by a flush
    // waiting on a dead path.
    this.#lane = store.lane();
    this.#stall = { ms: stallMs, onStall: () => logger.warn(`no answer from PostgreSQL in ${stallMs} ms: abandoning the 401 counts' connection`) };
    this.#logger = logger;
    this.#flusher = periodic(flushEveryMs, () => this.#flush(), (error) => this.#failed(error));
  }

  note(source: string, check: SignatureCheck, n = 1): void {
    const key = `${source}\n${check}`;
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + n);
  }

  /** Stops, writing what is counted first. */
  async stop(): Promise<void> {
    await this.#flusher.stop();
    await this.#flush().catch((error: unknown) => this.#failed(error));
  }

  /** Flushes now: what a test or a stop needs. */
  flush(): Promise<void> {
    return this.#flusher.runOnce();
  }

  #failed(error: unknown): void {
    this.#logger.warn({ err: error }, 'writing the count of deliveries answered 401 failed; it is tried again');
  }

  async #flush(): Promise<void> {
    if (this.#counts.size === 0) return;
    const rows = [...this.#counts].map(([key, count]) => {
      const [source, check] = key.split('\n');
      return { source, check, count };
    });
    this.#counts.clear();
    try {
      const insert = rowsOf(
        this.#lane.db,
        sql`insert into signature_failures (source, "check", count)
            select source, "check", count from json_to_recordset(${batchJson(rows)}::json) as r(source text, "check" text, count int)`,
      );
      await onLane(this.#lane, this.#stall, insert);
    } catch (error) {
      // Counted again at the next flush rather than lost while the database is away.
      for (const { source, check, count } of rows) this.note(source!, check as SignatureCheck, count);
      throw error;
    }
  }
}
