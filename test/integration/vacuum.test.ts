import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.ts';
import { createMetrics } from '../../src/metrics.ts';
import { startVacuum } from '../../src/retention/vacuum.ts';
import { recordDeliveries } from '../../src/store/atomic.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { engine, freshStore, type TestStore } from '../support/engine.ts';
import { shopReceipt } from '../support/receipts.ts';

let t: TestStore;
beforeAll(async () => {
  t = await freshStore();
});
afterAll(async () => t?.close());

/** Dead row versions of `tasks`, as the statistics count them once this session's counts are flushed. */
async function deadTasks(): Promise<number> {
  await t.store.db.execute(sql`select pg_stat_force_next_flush()`);
  const [row] = await rowsOf<{ n: number }>(t.store.db, sql`select n_dead_tup::int as n from pg_stat_user_tables where relname = 'tasks'`);
  return row!.n;
}

describe('vacuum', () => {
  it('on PGlite removes the dead task versions that claims and finishes leave; on PostgreSQL leaves it to autovacuum', async () => {
    const metrics = createMetrics();
    const vacuum = startVacuum(t.store, createLogger('silent'), metrics, { intervalMs: 3_600_000 });
    if (engine() === 'postgres') {
      expect(vacuum).toBeNull();
      return;
    }
    try {
      await recordDeliveries(t.store.db, Array.from({ length: 40 }, (_, i) => shopReceipt(`vac-d${i}`, `vac-e${i}`)));
      // What a claim and a finish do to each task: two new versions, the old ones dead.
      await t.store.db.execute(sql`update tasks set state = 'in_progress'`);
      await t.store.db.execute(sql`update tasks set state = 'succeeded'`);
      expect(await deadTasks()).toBeGreaterThanOrEqual(80);
      await vacuum!.runOnce();
      expect(await deadTasks()).toBe(0);
      // The pause each table's vacuum took is there for the operator to alert on.
      const observed = (await metrics.vacuumSeconds.get()).values.filter((v) => v.metricName === 'oncehook_embedded_vacuum_seconds_count');
      expect(Object.fromEntries(observed.map((v) => [v.labels.table, v.value]))).toEqual({ tasks: 1, attempts: 1, destinations: 1 });
    } finally {
      await vacuum?.stop();
    }
  });
});
