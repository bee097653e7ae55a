import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { STATE_TOTALS } from '../../src/store/atomic/alerts.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { freshStore, type TestStore } from '../support/engine.ts';

let t: TestStore;
beforeAll(async () => {
  t = await freshStore();
});
afterAll(async () => t?.close());

// Planned as the server would, seq scans allowed: the plan the tasks' statistics lead to. Every task succeeded, so a
// count that cannot see its state expects all of them to match and scans the table for its first ten thousand; on a
// history of millions that read the whole table every alert round.
it("counts the alert round's states over tasks_state_idx, whatever state the tasks are in", async () => {
  const { db } = t.store;
  await db.execute(sql`insert into tasks (id, source, action, event_id, delivery_id, state, body_sha256)
    select 't_plan_' || g, 'shop', 'crm', 'e_plan_' || g, 'd_plan_' || g, 'succeeded', md5(g::text) from generate_series(1, 3000) g`);
  await db.execute(sql`analyze tasks`);
  const plan = (await rowsOf<{ 'QUERY PLAN': string }>(db, sql`explain select ${STATE_TOTALS}`)).map((row) => row['QUERY PLAN']).join('\n');
  expect(plan).not.toContain('Seq Scan');
  expect(plan).toContain('tasks_state_idx');
});
