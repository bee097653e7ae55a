import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptTally } from '../../src/store/queries/attempt-tally.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { engine, freshStore, holdTransaction, type TestStore } from '../support/engine.ts';
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

let written = 0;

/** `n` rows of every class in turn, `open` being a row from before rows were written whole. */
async function attempts(n: number, txid?: string): Promise<void> {
  const from = written;
  written += n;
  await t.store.db.execute(sql`insert into attempts (task_id, claim, number, class ${txid ? sql`, txid` : sql``})
    select 't' || g, 1, 1, (array[null, 'success', 'retryable', 'unknown', 'lease_expired'])[1 + g % 5]
      ${txid ? sql`, ${txid}::xid8` : sql``}
    from generate_series(${from + 1}::int, ${from + n}::int) g`);
}

/** What a late result does to a reclaim's row (finish.ts): the class it came back with. */
async function lateResults(n: number, to = 'success'): Promise<void> {
  await t.store.db.execute(sql`update attempts set class = ${to}
    where id in (select id from attempts where class = 'lease_expired' order by id limit ${n})`);
}

describe('attempts by class', () => {
  it('counts as a whole count does, read after read, the rows from before the migration too', async () => {
    expect(await attemptTally(t.store)()).toEqual({});
    // Migration 0028 gave the rows already there the ID 0, before any process read them.
    await attempts(12, '0');
    const tally = attemptTally(t.store);
    await attempts(3);
    expect(await tally()).toEqual(await whole());
    await attempts(100);
    expect(await tally()).toEqual(await whole());
    // Reads at once share one: both would otherwise add the same new rows.
    await attempts(7);
    const together = await Promise.all([tally(), tally(), tally()]);
    for (const read of together) expect(read).toEqual(await whole());
  });

  it('counts a reclaimed attempt again with the class its late result gives it, whether counted before or not', async () => {
    const tally = attemptTally(t.store);
    await attempts(20);
    const before = await tally();
    // Rows from before the migration, and rows the tally counted, below its horizon.
    await lateResults(6);
    const after = await tally();
    expect(after).toEqual(await whole());
    expect(after.success).toBe(before.success! + 6);
    expect(after.lease_expired).toBe(before.lease_expired! - 6);
    // Rows not yet counted, changed before the read that first meets them.
    await attempts(10);
    await lateResults(1, 'retryable');
    expect(await tally()).toEqual(await whole());
    expect(await attemptTally(t.store)()).toEqual(await whole());
  });

  it('reads only the attempts written since its last read, not the history', async () => {
    const tally = attemptTally(t.store);
    const before = await tally();
    // No attempt is deleted; one deleted behind the tally's back shows whether it reads its past again.
    await t.store.db.execute(sql`delete from attempts where id = (select min(id) from attempts where class = 'success')`);
    await attempts(5);
    const after = await tally();
    expect(after.success).toBe(before.success! + 1);
    expect((await whole()).success).toBe(after.success! - 1);
  });

  it('counts the history in slices at its first read, each attempt once, those written or changed meanwhile too', async () => {
    await attempts(31);
    for (const slice of [1, 7, 10, 103, Infinity]) expect(await attemptTally(t.store, slice)()).toEqual(await whole());
    // Statement 1 takes the horizon, 2 and on are the slices: what lands before the first slice and between two
    // lies above the horizon and is counted by the read that follows the slices.
    for (const n of [2, 3, 4]) {
      const tally = attemptTally(writeBeforeStatement(t.store, n, () => Promise.all([attempts(5), lateResults(2)])), 7);
      expect(await tally()).toEqual(await whole());
      await attempts(3);
      await lateResults(1);
      expect(await tally()).toEqual(await whole());
    }
  });

  if (engine() === 'postgres') it('counts a row whose transaction began before a read and committed after it, once', async () => {
    const tally = attemptTally(t.store);
    await tally();
    const late = await holdTransaction(
      t.database.url!,
      (tx) => tx`update attempts set class = 'rejected'
                 where id = (select min(id) from attempts where class = 'lease_expired')`,
    );
    try {
      await attempts(5);
      const whileOpen = await tally();
      expect(whileOpen).toEqual(await whole());
      await late.commit();
      const after = await tally();
      expect(after.rejected).toBe((whileOpen.rejected ?? 0) + 1);
      expect(after).toEqual(await whole());
      expect(await tally()).toEqual(after);
    } finally {
      await late.commit();
      await late.end();
    }
  });
});
