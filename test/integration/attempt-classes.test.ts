import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptClasses } from '../../src/store/queries/attempt-classes.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { freshStore, type TestStore } from '../support/engine.ts';
import { writeBeforeStatement } from '../support/interleave.ts';

let t: TestStore;
beforeAll(async () => {
  t = await freshStore();
});
afterAll(async () => t?.close());

async function whole(): Promise<Record<string, number>> {
  const rows = await rowsOf<{ key: string; n: number }>(
    t.store.db,
    sql`select coalesce(class, 'open') as key, count(*)::int as n from attempts group by 1`,
  );
  return Object.fromEntries(rows.map((row) => [row.key, row.n]));
}

async function attempts(n: number): Promise<void> {
  await t.store.db.execute(sql`insert into attempts (task_id, number, class)
    select 't' || g, 1, (array[null, 'success', 'retryable', 'unknown', 'lease_expired'])[1 + g % 5]
    from generate_series(1, ${n}) g`);
}

describe('attempts by class', () => {
  it('counts each attempt once, slice by slice, as a whole count does', async () => {
    expect(await attemptClasses(t.store, 7)).toEqual({});
    await attempts(3);
    expect(await attemptClasses(t.store, 7)).toEqual(await whole());
    await attempts(100);
    // Gaps in the IDs (rolled-back inserts) leave slices short or empty.
    await t.store.db.execute(sql`delete from attempts where id between 20 and 45`);
    await t.store.db.execute(sql`update attempts set class = 'success' where class is null and id % 2 = 0`);
    for (const slice of [1, 7, 10, 103, 10_000, Infinity]) expect(await attemptClasses(t.store, slice)).toEqual(await whole());
  });

  it('takes the attempts inserted while it reads into its last slice', async () => {
    await attempts(50);
    const before = await whole();
    // The insert lands after the read has taken the highest ID and before its first slice.
    const counted = await attemptClasses(writeBeforeStatement(t.store, 2, () => attempts(5)), 5);
    const total = (counts: Record<string, number>) => Object.values(counts).reduce((n, c) => n + c, 0);
    expect(total(counted)).toBe(total(before) + 5);
    expect(counted).toEqual(await whole());
  });
});
