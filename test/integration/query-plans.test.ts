import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tasksOfReceiptSql } from '../../src/store/queries/deliveries.ts';
import { listTasksSql } from '../../src/store/queries/tasks.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { freshStore, type TestStore } from '../support/engine.ts';

let t: TestStore;
beforeAll(async () => {
  t = await freshStore();
});
afterAll(async () => t?.close());

/**
 * Lookups that run against tables growing without bound must have an index to walk. With sequential scans
 * priced out, the planner still picks one when no index can serve the query, so the plan names the gap.
 */
async function planOf(query: ReturnType<typeof sql>): Promise<string> {
  return t.store.db.transaction(async (tx) => {
    await tx.execute(sql`select set_config('enable_seqscan', 'off', true)`);
    const rows = await rowsOf<{ 'QUERY PLAN': string }>(tx, sql`explain ${query}`);
    return rows.map((row) => row['QUERY PLAN']).join('\n');
  });
}

describe('query plans', () => {
  it("a receipt's repeats are read through an index, not by scanning every receipt", async () => {
    const plan = await planOf(sql`select id from deliveries d where d.matched_delivery_id = 'r_x' order by d.seq limit 50`);
    expect(plan).toContain('deliveries_repeats_idx');
    expect(plan).not.toContain('Seq Scan');
  });

  // Claims and finishes no longer write these keys' index entries: the indexes live on task_refs.
  it('a page of tasks walks task_refs in (txid, task ID) order, from a cursor either way', async () => {
    const cursor = Buffer.from('1234:t_x').toString('base64url');
    for (const request of [
      { limit: 50, order: 'desc' as const },
      { limit: 50, order: 'asc' as const, cursor },
      { limit: 50, order: 'desc' as const, cursor },
    ]) {
      const plan = await planOf(listTasksSql({}, request));
      expect(plan).toContain('task_refs_page_idx');
      expect(plan).not.toContain('Seq Scan');
    }
  });

  it("a receipt's tasks are found through task_refs' receipt index", async () => {
    const plan = await planOf(tasksOfReceiptSql('r_x'));
    expect(plan).toContain('task_refs_delivery_idx');
    expect(plan).not.toContain('Seq Scan');
  });

  it("an event's tasks are found through task_refs' event index, with or without a source", async () => {
    for (const filter of [{ source: 'shop', eventId: 'e_x' }, { eventId: 'e_x' }]) {
      const plan = await planOf(listTasksSql(filter, { limit: 50, order: 'desc' }));
      expect(plan).toContain('task_refs_event_idx');
      expect(plan).not.toContain('Seq Scan');
    }
  });
});
