import { sql } from 'drizzle-orm';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';
import type { Store } from '../store/connect.ts';
import { rowsOf } from '../store/rows.ts';
import { periodic } from '../periodic.ts';

export interface UpkeepOptions {
  /** How often a pass starts. */
  intervalMs?: number;
}

/**
 * Between two steps: long enough for the deliveries that queued behind a step to be committed and answered
 * before the next one starts, so their wait is the longest step, not the whole pass.
 */
const BREATH_MS = 100;

/**
 * The tables a vacuum is due on. A vacuum holds the process while it reads the table's changed pages and then
 * every index of it whole, so each pass should leave little for the next: a table with dead rows is vacuumed
 * every pass (PostgreSQL's autovacuum waits for a fifth of the table to be dead, which on a soak doubled the
 * longest pause for the same work); a table only inserted into, every 10,000 new rows, so its pages are marked
 * all-visible and its rows frozen a slice at a time; and any table whose oldest unfrozen transaction ID is 200
 * million old, whatever else, so the database never nears transaction ID wraparound.
 */
async function tablesDue(store: Store): Promise<string[]> {
  // This session's counts reach the statistics at a transaction's end, at most once a second unless forced.
  await store.db.execute(sql`select pg_stat_force_next_flush()`);
  const rows = await rowsOf<{ name: string }>(
    store.db,
    sql`select format('%I.%I', s.schemaname, s.relname) as name
        from pg_stat_user_tables s join pg_class c on c.oid = s.relid
        where s.n_dead_tup > 50
           or s.n_ins_since_vacuum > 10000
           or age(c.relfrozenxid) > 200000000
        order by s.n_dead_tup desc`,
  );
  return rows.map((row) => row.name);
}

/**
 * PGlite runs PostgreSQL as one standalone backend: no autovacuum, and no checkpointer. Without the first,
 * dead versions were never removed (after three minutes of load the task table held two dead rows for every
 * live one, 420 MB for 177,000 tasks), and the insert-only tables were never frozen. Without the second,
 * the write-ahead log only ever grew — a standalone backend never starts a checkpoint when the log passes
 * max_wal_size — by about 100 MB a minute at 250 deliveries a second, and a restart after a crash replayed all
 * of it (10 s after 13 minutes). So every 30 seconds this vacuums the tables that are due and then
 * checkpoints, one statement at a time with a breath between: each holds the process while it runs, and each
 * is logged and measured so an operator sees the pauses grow with the tables. An idle gateway does neither.
 * On PostgreSQL the server does both, and nothing is started.
 */
export function startEmbeddedUpkeep(store: Store, logger: Logger, metrics: Metrics, options: UpkeepOptions = {}) {
  if (store.kind !== 'pglite') return null;
  const intervalMs = options.intervalMs ?? 30_000;
  let stopped = false;

  async function step(name: string, statement: string, ms: Record<string, number>): Promise<void> {
    if (Object.keys(ms).length > 0) await new Promise((resolve) => setTimeout(resolve, BREATH_MS));
    // A stop that came during the pause: the shutdown should not wait for one more step.
    if (stopped) return;
    const started = performance.now();
    await store.db.execute(sql.raw(statement));
    const seconds = (performance.now() - started) / 1000;
    metrics.upkeepSeconds.observe({ step: name }, seconds);
    ms[name] = Math.round(seconds * 1000);
  }

  // Where the log ended after this process's last checkpoint: while it stays there, an idle gateway has
  // nothing to checkpoint, and a forced checkpoint would still write and flush a record every pass.
  let checkpointedAt: string | null = null;
  const logEnd = async () => (await rowsOf<{ lsn: string }>(store.db, sql`select pg_current_wal_insert_lsn()::text as lsn`))[0]!.lsn;

  async function pass(): Promise<void> {
    const ms: Record<string, number> = {};
    for (const table of await tablesDue(store)) {
      if (stopped) return;
      await step(table, `vacuum ${table}`, ms);
    }
    if (stopped || (await logEnd()) === checkpointedAt) return;
    await step('checkpoint', 'checkpoint', ms);
    checkpointedAt = await logEnd();
    logger.info({ ms }, 'embedded database upkeep');
  }

  const schedule = periodic(intervalMs, pass, (error) =>
    logger.warn({ err: error }, 'the embedded database upkeep failed; will try again'),
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
export type EmbeddedUpkeep = NonNullable<ReturnType<typeof startEmbeddedUpkeep>>;
