import type { Config } from '../config/schema.ts';
import type { Logger } from '../log.ts';
import type { Store } from '../store/connect.ts';
import { advancePurge, purgeExpiredBodies, purgeWaiting, startOfPurge, type PurgeProgress } from '../store/retention.ts';
import { nextTurn } from '../store/slices.ts';
import { periodic } from './periodic.ts';

export interface PurgerOptions {
  /** How often a round starts. */
  intervalMs?: number;
  /** Rows per statement: small enough that each transaction is short and ingest never waits on it. */
  batchSize?: number;
}

/**
 * Purges expired bodies for every source, batch by batch, yielding between batches so the purge never holds
 * the database for long; a round ends when a batch comes back short. Each source's progress is remembered,
 * so a round reads what expired since the last one (and the tasks it passed unfinished), not the history.
 */
export function startPurger(config: Config, store: Store, logger: Logger, options: PurgerOptions = {}) {
  const intervalMs = options.intervalMs ?? 10 * 60_000;
  const batchSize = options.batchSize ?? 500;
  let stopped = false;
  const progress = new Map<string, PurgeProgress>();

  async function round(): Promise<number> {
    let total = 0;
    for (const [source, { retention }] of Object.entries(config.sources)) {
      const before = progress.get(source) ?? startOfPurge();
      const waiting = await purgeWaiting(store.db, before.waiting, retention);
      total += waiting.purged;
      for (;;) {
        if (stopped) return total;
        const purged = await purgeExpiredBodies(store.db, source, retention, batchSize, before.from);
        total += purged;
        if (purged < batchSize) break;
        await nextTurn();
      }
      progress.set(source, await advancePurge(store.db, source, retention, { from: before.from, waiting: waiting.waiting }));
    }
    if (total > 0) logger.info({ purged: total }, 'expired bodies purged; their dedup keys remain');
    return total;
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
