import { sql, type SQL } from 'drizzle-orm';
import type { Db, Store } from '../connect.ts';
import { rowsOf } from '../rows.ts';
import { nextTurn } from '../slices.ts';

/** The charts' ranges: the last hour by the minute, the last day by the quarter hour. */
export const RANGES = {
  hour: { seconds: 3600, step: 60 },
  day: { seconds: 86_400, step: 900 },
} as const;
export type Range = keyof typeof RANGES;

/**
 * What a chart counts: `buckets` of `step` seconds from `since`, the last one the bucket now is in (so it is still
 * filling). Aligned to the clock (a minute starts at :00), so two views a few seconds apart draw the same bars.
 */
export interface Window {
  range: Range;
  since: Date;
  step: number;
  buckets: number;
}

/** Rows counted per bucket and key: `counts[key][i]` is bucket i's, oldest first. */
export interface Series {
  window: Window;
  counts: Record<string, number[]>;
}

/** The window of `range` as the database's clock has it now. */
export async function windowOf(db: Db, range: Range): Promise<Window> {
  const { seconds, step } = RANGES[range];
  const [row] = await rowsOf<{ since: number }>(
    db,
    sql`select extract(epoch from date_bin(make_interval(secs => ${step}), now(), timestamptz 'epoch'))::float8 + ${step - seconds} as since`,
  );
  return { range, since: new Date(row!.since * 1000), step, buckets: seconds / step };
}

/**
 * The rows one statement of a chart's count aims at (slices.ts says why PGlite's are sliced). Fewer than the
 * stats' 10,000: a day's pages are mostly not in PGlite's cache, and a slice of 10,000 rows held the process 58–145
 * ms on a day of a million receipts (bench/charts.ts), 1.6–1.9 s in all; slices of 2,500 held it 8–24 ms, 1.3–1.7
 * s in all. The hour, in cache, takes a little longer in more slices: 70–93 ms against 50–54.
 */
export const CHART_SLICE = { pglite: 2_500, postgres: Infinity } as const;

/** A table's rows as a chart counts them: their time (a column an index finds a window by) and their key. */
export interface Counted {
  table: SQL;
  at: SQL;
  key: SQL;
}

/** One statement: the rows of `counted` from `from` (up to `to`, if given) per bucket of `window` and key. */
export function bucketCountSql(counted: Counted, window: Window, from: Date, to: Date | null): SQL {
  const { table, at, key } = counted;
  return sql`select floor(extract(epoch from ${at} - ${window.since.toISOString()}::timestamptz) / ${window.step})::int as bucket,
      ${key} as key, count(*)::int as n
    from ${table}
    where ${at} >= ${from.toISOString()}::timestamptz ${to ? sql`and ${at} < ${to.toISOString()}::timestamptz` : sql``}
    group by 1, 2`;
}

/**
 * Counts `counted`'s rows in `window` per bucket and key. On PostgreSQL in one statement. On PGlite in slices of
 * time, each aimed at about `slice` rows from the rate the one before found, the process serving deliveries
 * between them: a day of a million rows counted at once would hold it for a second or more. Slices
 * need not fall on buckets' edges: each row is counted in its own bucket, by whichever slice holds it.
 */
export async function countByBucket(store: Store, counted: Counted, window: Window, slice: number = CHART_SLICE[store.kind]): Promise<Series> {
  const counts: Record<string, number[]> = {};
  const add = (rows: { bucket: number; key: string; n: number }[]) => {
    for (const { bucket, key, n } of rows) {
      // A row from after the window's end (its last minute ended while the count ran) has no bar in it.
      if (bucket < 0 || bucket >= window.buckets) continue;
      (counts[key] ??= new Array<number>(window.buckets).fill(0))[bucket]! += n;
    }
    return rows.reduce((sum, row) => sum + row.n, 0);
  };
  if (slice === Infinity) {
    add(await rowsOf(store.db, bucketCountSql(counted, window, window.since, null)));
    return { window, counts };
  }
  const end = window.since.getTime() + window.buckets * window.step * 1000;
  // The first slice a second long: the rate is not known yet, and a quarter hour at 250 receipts a second is 225,000.
  let span = 1000;
  for (let from = window.since.getTime(); ; ) {
    const last = from + span >= end;
    const read = add(await rowsOf(store.db, bucketCountSql(counted, window, new Date(from), last ? null : new Date(from + span))));
    if (last) return { window, counts };
    from += span;
    // From the rate this slice found (none: four times as long). At most four times as long as this one, so a quiet
    // stretch before a busy one cannot stretch the next over all of it; at least a second, so a burst cannot make
    // slices ever thinner.
    span = Math.max(1000, Math.round(span * Math.min(4, slice / read)));
    await nextTurn();
  }
}
