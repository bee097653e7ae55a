import type { Config } from '../config/schema.ts';
import type { Logger } from '../log.ts';
import type { Store } from '../store/connect.ts';
import { purgeExpiredBodies, purgeExpiredHeaders, type PurgeCursor } from '../store/retention.ts';
import { nextTurn } from '../store/slices.ts';
import { periodic } from '../periodic.ts';

export interface PurgerOptions {
  /** How often a round starts. */
  intervalMs?: number;
  /** Rows per statement: small enough that each transaction is short and ingest never waits on it. */
  batchSize?: number;
}

/**
 * Purges expired bodies for every source, then the receipts' headers that came with them, batch by batch, yielding between batches so the purge never holds
 * the database for long; a source's turn ends when a batch comes back short. Each batch reads on from where
 * the last one ended in `tasks_purge_idx`, which holds only what may be purged, so a round costs what it
 * purges. A source whose purge fails is logged and the round goes on with the next one.
 */
export function startPurger(config: Config, store: Store, logger: Logger, options: PurgerOptions = {}) {
  const intervalMs = options.intervalMs ?? 10 * 60_000;
  const batchSize = options.batchSize ?? 500;
  let stopped = false;

  async function purgeSource(source: string, retentionMs: number): Promise<number> {
    let total = 0;
    let after: PurgeCursor | null = null;
    while (!stopped) {
      const batch = await purgeExpiredBodies(store.db, source, retentionMs, batchSize, after);
      total += batch.purged;
      if (batch.last === null || batch.purged < batchSize) break;
      after = batch.last;
      await nextTurn();
    }
    return total;
  }

  async function purgeHeaders(source: string, retentionMs: number): Promise<number> {
    let total = 0;
    let after: PurgeCursor | null = null;
    while (!stopped) {
      const batch = await purgeExpiredHeaders(store.db, source, retentionMs, batchSize, after);
      total += batch.purged;
      if (batch.next === null) break;
      after = batch.next;
      await nextTurn();
    }
    return total;
  }

  /** One pass over every source; resolves with the number of task bodies purged. */
  async function round(): Promise<number> {
    let bodies = 0;
    let headers = 0;
    for (const [source, { retention }] of Object.entries(config.sources)) {
      if (stopped) break;
      try {
        bodies += await purgeSource(source, retention);
        // After the bodies: a receipt's headers go once its tasks hold none.
        headers += await purgeHeaders(source, retention);
      } catch (error) {
        logger.warn({ err: error, source }, 'purging a source\'s expired bodies failed; the other sources go on');
      }
    }
    if (bodies + headers > 0) logger.info({ purged: bodies, headers }, 'expired bodies and headers purged; their dedup keys remain');
    return bodies;
  }

  const schedule = periodic(intervalMs, round, (error) => logger.warn({ err: error }, 'purging expired bodies failed; will try again'));

  return {
    /** One round now; resolves with the number of bodies purged. */
    runOnce: schedule.runOnce,
    async stop(): Promise<void> {
      stopped = true;
      await schedule.stop();
    },
  };
}
export type Purger = ReturnType<typeof startPurger>;
