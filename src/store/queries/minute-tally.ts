import { sql, type SQL } from 'drizzle-orm';
import type { Store } from '../connect.ts';
import { rowsOf } from '../rows.ts';
import { horizon } from './cursor.ts';
import { oneAtATime } from './increments.ts';
import { CHART_SLICE, countByBucket, RANGES, type Series, type Window } from './time-buckets.ts';

/** What a chart counts by increments: a table with a `txid` indexed for them, a row's time and its key. */
export interface ChartLedger {
  table: SQL;
  at: SQL;
  key: SQL;
  /** A key rows may leave (a reclaim's class: attempt-tally.ts says why), counted whole in each read instead. */
  leaving?: { key: string; rows: SQL };
}

const MINUTE = 60;
/**
 * How far back the minutes are kept: the day's window, and a quarter hour more, so that the window a request took
 * a little before a read is still inside what that read counted.
 */
const KEPT = RANGES.day.seconds + RANGES.day.step;
/**
 * After this long without a read, the next counts the day again rather than every row since the last: that many
 * rows cost a direct count of them, and an hour of them is what the hour's view counted whole.
 */
const IDLE_MS = RANGES.hour.seconds * 1000;

interface Held {
  /** The horizon of the last read: rows below it are in `closed`. */
  below: string;
  /** The first minute kept, in seconds since the epoch. */
  since: number;
  /** Rows below `below` per minute (seconds since the epoch) and key. */
  closed: Map<number, Map<string, number>>;
  readAt: number;
}

interface MinuteRow {
  horizon: string;
  now: number;
  minute: number | null;
  key: string | null;
  seen: number;
  /** Null for the leaving key's whole count, which is never closed. */
  settled: number | null;
}

/**
 * A chart's counts per minute of the last day, read in time that follows the rows written since the last view rather
 * than the day's (counted whole, the day took 0.73–0.95 s a view on ten million tasks of history, ~1 µs a row). The
 * hour's and the day's bars are sums of these minutes (each range's step is whole minutes, aligned to the clock).
 *
 * The rows' counts go by increments (increments.ts), a window of time at a time: the first read takes the horizon and
 * counts the rows of the kept day below it, by time (in slices on PGlite, as countByBucket counts); every read after
 * counts the rows at or above the last horizon, by `txid`, keeping those below the new one. A row is written with its
 * time and key and keeps them, but for `leaving`'s key. A minute older than the kept day is dropped.
 */
export function minuteTally(store: Store, ledger: ChartLedger): (window: Window) => Promise<Series> {
  const { db } = store;
  const { table, at, key, leaving } = ledger;
  let held: Held | null = null;

  /** The rows of the kept day below the horizon, per minute and key: those a later read counts no more. */
  async function start(): Promise<Held> {
    const [row] = await rowsOf<{ horizon: string; now: number }>(db, sql`select (${horizon})::text as horizon, extract(epoch from now())::float8 as now`);
    const since = Math.floor((row!.now - KEPT) / MINUTE) * MINUTE;
    // Up to now: a row below the horizon was written before it was taken, and its time is its insert's or earlier.
    // An hour more, should a clock step: countByBucket leaves out what falls after the last bucket.
    const buckets = Math.ceil((row!.now - since) / MINUTE) + 60;
    const minutes: Window = { range: 'day', since: new Date(since * 1000), step: MINUTE, buckets };
    const below = sql`(select ${at} as at, ${key} as key from ${table} where txid < ${row!.horizon}::xid8) as closed`;
    const { counts } = await countByBucket(store, { table: below, at: sql`at`, key: sql`key` }, minutes, CHART_SLICE[store.kind]);
    const closed = new Map<number, Map<string, number>>();
    for (const [k, perMinute] of Object.entries(counts)) {
      if (k === leaving?.key) continue;
      perMinute.forEach((n, i) => n > 0 && add(closed, since + i * MINUTE, k, n));
    }
    return { below: row!.horizon, since, closed, readAt: performance.now() };
  }

  const read = oneAtATime(async (): Promise<Map<number, Map<string, number>>> => {
    if (held === null || performance.now() - held.readAt > IDLE_MS) held = await start();
    const state = held;
    const since = new Date(state.since * 1000).toISOString();
    const minute = (column: SQL) => sql`(floor(extract(epoch from ${column}) / ${MINUTE}) * ${MINUTE})::float8`;
    // The new rows found by their txid alone, materialized: offered the window's time too, the planner may read the
    // whole day through the time index and filter it by txid, which is the count this tally is there to spare.
    const rows = await rowsOf<MinuteRow>(
      db,
      sql`with h as materialized (select ${horizon} as at),
          fresh as materialized (select ${at} as at, ${key} as key, txid from ${table} where txid >= ${state.below}::xid8)
          select (select at::text from h) as horizon, extract(epoch from now())::float8 as now, d.minute, d.key, d.seen, d.settled
          from h left join lateral (
            select ${minute(sql`fresh.at`)} as minute, fresh.key, count(*)::int as seen, (count(*) filter (where fresh.txid < h.at))::int as settled
            from fresh where fresh.at >= ${since}::timestamptz group by 1, 2
            ${leaving ? sql`union all select ${minute(at)}, ${leaving.key}::text, count(*)::int, null::int from ${leaving.rows} where ${at} >= ${since}::timestamptz group by 1` : sql``}
          ) d on true`,
    );
    const totals = new Map([...state.closed].map(([m, keys]) => [m, new Map(keys)]));
    for (const { minute: m, key: k, seen, settled } of rows) {
      if (m === null || k === null) continue;
      if (settled === null) add(totals, m, k, seen);
      else if (k !== leaving?.key) {
        add(totals, m, k, seen);
        add(state.closed, m, k, settled);
      }
    }
    const first = rows[0]!;
    // As in Increments.add: a horizon read late may step back, and the rows below the higher one are closed already.
    if (BigInt(first.horizon) > BigInt(state.below)) state.below = first.horizon;
    const keepFrom = Math.floor((first.now - KEPT) / MINUTE) * MINUTE;
    for (const m of state.closed.keys()) if (m < keepFrom) state.closed.delete(m);
    state.since = Math.max(state.since, keepFrom);
    state.readAt = performance.now();
    return totals;
  });

  return async (window) => {
    const minutes = await read();
    const counts: Record<string, number[]> = {};
    const start = window.since.getTime() / 1000;
    for (const [m, keys] of minutes) {
      const bucket = Math.floor((m - start) / window.step);
      if (bucket < 0 || bucket >= window.buckets) continue;
      for (const [k, n] of keys) (counts[k] ??= new Array<number>(window.buckets).fill(0))[bucket]! += n;
    }
    return { window, counts };
  };
}

function add(minutes: Map<number, Map<string, number>>, minute: number, key: string, n: number): void {
  let keys = minutes.get(minute);
  if (!keys) minutes.set(minute, (keys = new Map()));
  keys.set(key, (keys.get(key) ?? 0) + n);
}
