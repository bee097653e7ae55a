import { sql } from 'drizzle-orm';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';
import type { Store } from '../store/connect.ts';
import { periodic } from './periodic.ts';

export interface VacuumOptions {
  /** How often a pass starts. */
  intervalMs?: number;
}

/**
 * The tables that take updates. Every claim and finish writes a new version of its task (both change
 * indexed columns), a finish completes its attempt row, a cooldown upserts its destination; the rest are
 * written once.
 */
const UPDATED_TABLES = ['tasks', 'attempts', 'destinations'] as const;

/**
 * PGlite runs PostgreSQL as one standalone backend, without autovacuum: dead versions were never removed, and
 * after three minutes of load the task table held two dead rows for every live one (420 MB for 177,000 tasks).
 * This vacuums the updated tables every 30 seconds, one statement at a time with a turn of the event loop
 * between: each holds the process while it runs — 50–220 ms a pass under about 1,000 deliveries per second,
 * growing with the indexes it scans — and the table stayed near its live size (138 MB for 114,000 tasks).
 * On PostgreSQL the server's autovacuum does this, and nothing is started.
 */
export function startVacuum(store: Store, logger: Logger, metrics: Metrics, options: VacuumOptions = {}) {
  if (store.kind !== 'pglite') return null;
  const intervalMs = options.intervalMs ?? 30_000;
  let stopped = false;

  // Each statement is a pause in answering webhooks, and it grows with the tables: the operator sees every
  // pass in the log and can alert on the histogram before a pause nears a sender's timeout.
  async function pass(): Promise<void> {
    const ms: Partial<Record<(typeof UPDATED_TABLES)[number], number>> = {};
    for (const table of UPDATED_TABLES) {
      if (stopped) break;
      const started = performance.now();
      await store.db.execute(sql.raw(`vacuum ${table}`));
      const seconds = (performance.now() - started) / 1000;
      metrics.vacuumSeconds.observe({ table }, seconds);
      ms[table] = Math.round(seconds * 1000);
      await new Promise((resolve) => setImmediate(resolve));
    }
    logger.info({ ms }, 'vacuumed the embedded database');
  }

  const schedule = periodic(intervalMs, pass, (error) =>
    logger.warn({ err: error }, 'vacuuming the embedded database failed; will try again'),
  );

  return {
    /** One pass now. */
    runOnce: schedule.runOnce,
    async stop(): Promise<void> {
      stopped = true;
      await schedule.stop();
    },
  };
}
export type Vacuum = NonNullable<ReturnType<typeof startVacuum>>;
