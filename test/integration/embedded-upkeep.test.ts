import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.ts';
import { createMetrics, type Metrics } from '../../src/metrics.ts';
import { startEmbeddedUpkeep } from '../../src/retention/embedded-upkeep.ts';
import { recordDeliveries } from '../../src/store/atomic/record.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { engine, freshStore, type TestStore } from '../support/engine.ts';
import { shopReceipt } from '../support/receipts.ts';

let t: TestStore;
beforeAll(async () => {
  t = await freshStore();
});
afterAll(async () => t?.close());

/** What the statistics say of a table once this session's counts are flushed. */
async function tableStats(table: string): Promise<{ dead: number; insertedSinceVacuum: number }> {
  await t.store.db.execute(sql`select pg_stat_force_next_flush()`);
  const [row] = await rowsOf<{ dead: number; insertedSinceVacuum: number }>(
    t.store.db,
    sql`select n_dead_tup::int as dead, n_ins_since_vacuum::int as "insertedSinceVacuum" from pg_stat_user_tables where relname = ${table}`,
  );
  return row!;
}

/** Where crash recovery would start replaying the write-ahead log: it moves only at a checkpoint. */
async function redoPoint(): Promise<string> {
  const [row] = await rowsOf<{ redo: string }>(t.store.db, sql`select redo_lsn::text as redo from pg_control_checkpoint()`);
  return row!.redo;
}

/** How many times each step ran, as the operator's histogram counts them. */
async function stepsRun(metrics: Metrics): Promise<Record<string, number>> {
  const { values } = await metrics.upkeepSeconds.get();
  return Object.fromEntries(values.filter((v) => v.metricName === 'oncehook_embedded_upkeep_seconds_count').map((v) => [v.labels.step, v.value]));
}


describe('embedded database upkeep', () => {
  it('on PGlite vacuums the tables that are due and checkpoints the log, and does nothing when idle; on PostgreSQL leaves both to the server', async () => {
    const metrics = createMetrics();
    const upkeep = startEmbeddedUpkeep(t.store, createLogger('silent'), metrics, { intervalMs: 3_600_000 });
    if (engine() === 'postgres') {
      expect(upkeep).toBeNull();
      return;
    }
    try {
      await recordDeliveries(t.store.db, Array.from({ length: 40 }, (_, i) => shopReceipt(`dead-d${i}`, `dead-e${i}`)));
      // What a claim and a finish do to each task: two new versions, the old ones dead.
      await t.store.db.execute(sql`update tasks set state = 'in_progress'`);
      await t.store.db.execute(sql`update tasks set state = 'succeeded'`);
      expect((await tableStats('tasks')).dead).toBeGreaterThanOrEqual(80);
      const redoBefore = await redoPoint();
      await upkeep!.runOnce();
      expect((await tableStats('tasks')).dead).toBe(0);
      // A standalone backend never checkpoints by itself: without this step the log would only grow.
      expect(await redoPoint()).not.toBe(redoBefore);
      // 40 new receipts are far below the insert threshold: their table is left for a later pass.
      expect(await stepsRun(metrics)).toEqual({ 'public.tasks': 1, checkpoint: 1 });

      // An insert-only table is vacuumed too, every 10,000 new rows: what marks its pages all-visible and freezes
      // its rows, a slice at a time, before transaction IDs could wrap around.
      await t.store.db.execute(sql`create table upkeep_probe (n int)`);
      await t.store.db.execute(sql`insert into upkeep_probe select generate_series(1, 10001)`);
      expect((await tableStats('upkeep_probe')).insertedSinceVacuum).toBe(10001);
      await upkeep!.runOnce();
      expect((await tableStats('upkeep_probe')).insertedSinceVacuum).toBe(0);
      expect(await stepsRun(metrics)).toEqual({ 'public.tasks': 1, 'public.upkeep_probe': 1, checkpoint: 2 });

      // Nothing written since: an idle gateway neither vacuums nor checkpoints.
      const redoIdle = await redoPoint();
      await upkeep!.runOnce();
      expect(await redoPoint()).toBe(redoIdle);
      expect(await stepsRun(metrics)).toEqual({ 'public.tasks': 1, 'public.upkeep_probe': 1, checkpoint: 2 });
    } finally {
      await upkeep?.stop();
    }
  });

  it('a stop during the pause between two steps runs no further step', async () => {
    const metrics = createMetrics();
    const upkeep = startEmbeddedUpkeep(t.store, createLogger('silent'), metrics, { intervalMs: 3_600_000 });
    if (engine() === 'postgres') {
      expect(upkeep).toBeNull();
      return;
    }
    // Two tables due, so the pass pauses after the first.
    await t.store.db.execute(sql`create table upkeep_stop_a (n int)`);
    await t.store.db.execute(sql`create table upkeep_stop_b (n int)`);
    await t.store.db.execute(sql`insert into upkeep_stop_a select generate_series(1, 10001)`);
    await t.store.db.execute(sql`insert into upkeep_stop_b select generate_series(1, 10001)`);
    const pass = upkeep!.runOnce();
    const ran = async () => Object.values(await stepsRun(metrics)).reduce((a, b) => a + b, 0);
    while ((await ran()) === 0) await new Promise((resolve) => setImmediate(resolve));
    await upkeep!.stop();
    await pass;
    expect(await ran()).toBe(1);
  });
});
