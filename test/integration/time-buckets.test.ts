import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptsOverTime } from '../../src/store/queries/attempt-series.ts';
import { deliveriesOverTime, RECEIPTS_BY_DECISION } from '../../src/store/queries/delivery-series.ts';
import { statsReader } from '../../src/store/queries/stats.ts';
import { countByBucket, windowOf, type Series, type Window } from '../../src/store/queries/time-buckets.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { freshStore, type TestStore } from '../support/engine.ts';

let t: TestStore;
beforeAll(async () => {
  t = await freshStore();
  // Receipts and attempts at these many seconds before now: inside and outside both windows, and on a bucket's edge.
  const ago = [5, 30, 61, 119, 600, 3_000, 3_400, 3_700, 7_200, 40_000, 85_000, 86_500, 200_000];
  await t.store.db.execute(sql`insert into deliveries (id, source, delivery_id, event_id, received_at, decision, headers, body_sha256, body_bytes)
    select 'd_' || g || '_' || s, 'shop', 'w_' || g || '_' || s, 'e_' || g, now() - make_interval(secs => s),
      (array['accepted', 'duplicate_delivery', 'duplicate_event'])[1 + g % 3], '{}', 'x', 1
    from unnest(${`{${ago.join(',')}}`}::int[]) s, generate_series(1, 4) g`);
  await t.store.db.execute(sql`insert into attempts (task_id, number, started_at, class)
    select 't_' || g, 1, now() - make_interval(secs => s), (array[null, 'success', 'retryable', 'unknown'])[1 + g % 4]
    from unnest(${`{${ago.join(',')}}`}::int[]) s, generate_series(1, 5) g`);
});
afterAll(async () => t?.close());

/** The same counts, computed here from each row's time: what the chart must show. */
async function expected(window: Window, table: 'deliveries' | 'attempts'): Promise<Record<string, number[]>> {
  const rows = await rowsOf<{ at: number; key: string }>(
    t.store.db,
    table === 'deliveries'
      ? sql`select extract(epoch from received_at)::float8 as at, decision as key from deliveries`
      : sql`select extract(epoch from started_at)::float8 as at, coalesce(class, 'open') as key from attempts`,
  );
  const counts: Record<string, number[]> = {};
  for (const { at, key } of rows) {
    const bucket = Math.floor((at * 1000 - window.since.getTime()) / (window.step * 1000));
    if (bucket < 0 || bucket >= window.buckets) continue;
    (counts[key] ??= new Array<number>(window.buckets).fill(0))[bucket]! += 1;
  }
  return counts;
}

const sum = (series: Series) => Object.values(series.counts).flat().reduce((a, b) => a + b, 0);

describe('counts per time bucket', () => {
  it('aligns the window to the clock: 60 minutes or 96 quarter hours, ending with the one now is in', async () => {
    const clock = async () => ((await rowsOf<{ now: number }>(t.store.db, sql`select extract(epoch from now())::float8 * 1000 as now`)) as [{ now: number }])[0].now;
    for (const [range, step, buckets] of [['hour', 60, 60], ['day', 900, 96]] as const) {
      // The window's own now lies between these two: a bucket's edge may fall between the statements.
      const before = await clock();
      const window = await windowOf(t.store.db, range);
      const after = await clock();
      expect(window).toMatchObject({ range, step, buckets });
      expect(window.since.getTime() % (step * 1000)).toBe(0);
      const end = window.since.getTime() + buckets * step * 1000;
      expect(end).toBeGreaterThan(before);
      expect(end - step * 1000).toBeLessThanOrEqual(after);
    }
  });

  it('counts receipts by decision and attempts by class (open while in flight) in each bucket', async () => {
    for (const range of ['hour', 'day'] as const) {
      const window = await windowOf(t.store.db, range);
      expect((await deliveriesOverTime(t.store, window)).counts).toEqual(await expected(window, 'deliveries'));
      const attempts = await attemptsOverTime(t.store, window);
      expect(attempts.counts).toEqual(await expected(window, 'attempts'));
      expect(Object.keys(attempts.counts).sort()).toEqual(['open', 'retryable', 'success', 'unknown']);
    }
    // The hour starts 3,540 to 3,600 s ago, as far into its minute as now is: 5 s to 3,400 s ago are in it, 7 times 4
    // receipts. The day starts 85,500 to 86,400 s ago: 11 times 4.
    expect(sum(await deliveriesOverTime(t.store, await windowOf(t.store.db, 'hour')))).toBe(28);
    expect(sum(await deliveriesOverTime(t.store, await windowOf(t.store.db, 'day')))).toBe(44);
  });

  it('counts the same in slices of time of any size, as PGlite reads it, as in one statement', async () => {
    const window = await windowOf(t.store.db, 'day');
    const whole = await countByBucket(t.store, RECEIPTS_BY_DECISION, window, Infinity);
    for (const slice of [1, 3, 10, 10_000]) expect(await countByBucket(t.store, RECEIPTS_BY_DECISION, window, slice)).toEqual(whole);
  });

  it('when every receipt and attempt is in the window, its totals are those of /api/stats', async () => {
    const window = await windowOf(t.store.db, 'hour');
    await t.store.db.execute(sql`delete from deliveries where received_at < ${window.since.toISOString()}::timestamptz`);
    await t.store.db.execute(sql`delete from attempts where started_at < ${window.since.toISOString()}::timestamptz`);
    // A reader made now: its tallies count what is left whole on their first read.
    const stats = await statsReader(t.store)();
    const totals = (series: Series) => Object.fromEntries(Object.entries(series.counts).map(([key, row]) => [key, row.reduce((a, b) => a + b, 0)]));
    expect(totals(await deliveriesOverTime(t.store, window))).toEqual(stats.decisions);
    expect(totals(await attemptsOverTime(t.store, window))).toEqual(stats.attempts);
    expect(stats.deliveries).toBe(28);
  });
});
