import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
});
