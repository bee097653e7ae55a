import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptChart } from '../../src/store/queries/attempt-series.ts';
import { deliveryChart, RECEIPTS_BY_DECISION } from '../../src/store/queries/delivery-series.ts';
import { statsReader } from '../../src/store/queries/stats.ts';
import { countByBucket, windowOf, type Series, type Window } from '../../src/store/queries/time-buckets.ts';
import type { Store } from '../../src/store/connect.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { freshStore, type TestStore } from '../support/engine.ts';
import { writeBeforeStatement } from '../support/interleave.ts';

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

/** Receipts and attempts of every class, reclaims' included, a few seconds to half a day old. */
async function more(prefix: string): Promise<void> {
  const ago = [1, 70, 2_000, 40_000];
  await t.store.db.execute(sql`insert into deliveries (id, source, delivery_id, event_id, received_at, decision, headers, body_sha256, body_bytes)
    select 'd_' || ${prefix} || g || '_' || s, 'shop', 'w_' || ${prefix} || g || '_' || s, 'e_' || g, now() - make_interval(secs => s),
      (array['accepted', 'duplicate_delivery', 'duplicate_event'])[1 + g % 3], '{}', 'x', 1
    from unnest(${`{${ago.join(',')}}`}::int[]) s, generate_series(1, 3) g`);
  await t.store.db.execute(sql`insert into attempts (task_id, number, started_at, class)
    select ${prefix} || '_' || g, 1, now() - make_interval(secs => s), (array['success', 'retryable', 'lease_expired'])[1 + g % 3]
    from unnest(${`{${ago.join(',')}}`}::int[]) s, generate_series(1, 3) g`);
}

/** A chart's first read, as a process just started makes it. */
const deliveriesOverTime = (store: Store, window: Window) => deliveryChart(store)(window);
const attemptsOverTime = (store: Store, window: Window) => attemptChart(store)(window);

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

  it('read again, counts the rows since the last read with those it counted, as a whole count does', async () => {
    const deliveries = deliveryChart(t.store);
    const attempts = attemptChart(t.store);
    const agrees = async () => {
      for (const range of ['hour', 'day'] as const) {
        const window = await windowOf(t.store.db, range);
        expect((await deliveries(window)).counts).toEqual(await expected(window, 'deliveries'));
        expect((await attempts(window)).counts).toEqual(await expected(window, 'attempts'));
      }
    };
    await agrees();
    await more('r1');
    await agrees();
    // A late result replaces a reclaim's guess, counted or not yet: the row counts in its new class only.
    await t.store.db.execute(sql`update attempts set class = 'success' where class = 'lease_expired' and task_id like 'r1%' and started_at > now() - interval '1 hour'`);
    await more('r2');
    await agrees();
    await t.store.db.execute(sql`update attempts set class = 'rejected' where class = 'lease_expired'`);
    await agrees();
    // Reads at once share one: both would otherwise add the same new rows.
    await more('r3');
    const window = await windowOf(t.store.db, 'day');
    const together = await Promise.all([deliveries(window), deliveries(window), attempts(window), attempts(window)]);
    expect(together.map((series) => series.counts)).toEqual([
      await expected(window, 'deliveries'),
      await expected(window, 'deliveries'),
      await expected(window, 'attempts'),
      await expected(window, 'attempts'),
    ]);
  });

  it('counts the rows written while its first read counts the day, once', async () => {
    // Statement 1 takes the horizon, 2 counts the day below it, 3 the rows at or above it.
    for (const n of [2, 3]) {
      const store = writeBeforeStatement(t.store, n, () => more(`s${n}`));
      const window = await windowOf(t.store.db, 'day');
      expect((await deliveryChart(store)(window)).counts).toEqual(await expected(window, 'deliveries'));
    }
    // The attempts' chart counts those in flight beside, so which statement comes second is the race's: the read
    // after the write's commit shows whether any row was counted twice or left out.
    for (const n of [2, 3, 4]) {
      const store = writeBeforeStatement(t.store, n, () => more(`a${n}`));
      const chart = attemptChart(store);
      await chart(await windowOf(t.store.db, 'day'));
      const window = await windowOf(t.store.db, 'day');
      expect((await chart(window)).counts).toEqual(await expected(window, 'attempts'));
    }
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
    expect(stats.deliveries).toBe(sum({ window, counts: await expected(window, 'deliveries') }));
  });
});
