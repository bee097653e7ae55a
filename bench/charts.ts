/**
 * How long the dashboard's home page charts take to count, on a history of millions of rows.
 *
 *   npx tsx bench/charts.ts                         # PostgreSQL at 127.0.0.1:5432, 3,000,000 receipts and attempts over 3 days
 *   npx tsx bench/charts.ts --pglite                # embedded PGlite in a temporary directory
 *   npx tsx bench/charts.ts --rows 1000000 --days 7 --without-index
 *
 * Fills a scratch database (`oncehook_charts`, dropped at the end; PGlite's directory likewise) with receipts and
 * attempts spread evenly over the last `--days`, inserted oldest first as ingest and the forwarder insert them,
 * then times each chart's count for the last hour and the last day: the median of five, and on PostgreSQL the
 * statement's EXPLAIN ANALYZE; on PGlite the longest statement too, which is how long the process was held.
 * `--without-index` times the counts again with the time indexes (migration 0017) dropped (on PGlite the hour only).
 */
import { Command } from 'commander';
import { sql } from 'drizzle-orm';
import type { Store } from '../src/store/connect.ts';
import { ATTEMPTS_BY_CLASS } from '../src/store/queries/attempt-series.ts';
import { RECEIPTS_BY_DECISION } from '../src/store/queries/delivery-series.ts';
import { bucketCountSql, countByBucket, windowOf, type Counted, type Range } from '../src/store/queries/time-buckets.ts';
import { rowsOf } from '../src/store/rows.ts';
import { openScratch } from './scratch.ts';

const options = new Command()
  .option('--pg-url <url>', 'a PostgreSQL server to make the scratch database on', 'postgres://postgres@127.0.0.1:5432/postgres')
  .option('--pglite', 'embedded PGlite instead')
  .option('--rows <n>', 'receipts, and as many attempts', (v) => Number(v), 3_000_000)
  .option('--days <n>', 'the history they are spread over', (v) => Number(v), 3)
  .option('--without-index', 'time the counts again with the time indexes dropped')
  .option('--slice <rows>', "on PGlite, the rows a slice aims at (the gateway's: CHART_SLICE.pglite)", (v) => Number(v))
  .parse()
  .opts<{ pgUrl: string; pglite?: boolean; rows: number; days: number; withoutIndex?: boolean; slice?: number }>();

const CHUNK = 100_000;

/** The history, in chunks so PGlite is never asked for millions of rows in one statement. */
async function load(store: Store, rows: number, days: number): Promise<void> {
  const at = (g: ReturnType<typeof sql>) => sql`now() - make_interval(days => ${days}) + (${g}::float8 / ${rows}) * make_interval(days => ${days})`;
  for (let from = 1; from <= rows; from += CHUNK) {
    const to = Math.min(rows, from + CHUNK - 1);
    await store.db.execute(sql`insert into deliveries (id, source, delivery_id, event_id, topic, received_at, decision, headers, content_type, body_sha256, body_bytes)
      select 'd_hist_' || g, 'shop', 'wh_' || g, 'ev_' || (g / 10), 'orders/create', ${at(sql`g`)},
        case when g % 100 < 80 then 'accepted' when g % 100 < 92 then 'duplicate_delivery'
             when g % 100 < 97 then 'duplicate_event' else 'duplicate_task' end,
        jsonb_build_object('content-type', 'application/json', 'user-agent', 'Shopify-Captain-Hook',
          'x-shopify-topic', 'orders/create', 'x-shopify-shop-domain', 'example.myshopify.com',
          'x-shopify-webhook-id', 'wh_' || g, 'x-shopify-hmac-sha256', '[redacted]'),
        'application/json', md5(g::text) || md5(g::text), 500
      from generate_series(${from}::int, ${to}::int) g order by g`);
    await store.db.execute(sql`insert into attempts (task_id, number, kind, started_at, finished_at, response_status, duration_ms, class, decision)
      select 't_hist_' || g, 1, 'send', ${at(sql`g`)}, ${at(sql`g`)} + interval '40 ms', 200, 40,
        case when g % 100 < 88 then 'success' when g % 100 < 94 then 'retryable' when g % 100 < 96 then 'rejected'
             when g % 100 < 98 then 'unknown' when g % 100 < 99 then 'not_sent' else 'lookup_found' end, 'succeeded'
      from generate_series(${from}::int, ${to}::int) g order by g`);
    process.stderr.write(`\rloaded ${to.toLocaleString('en')} of ${rows.toLocaleString('en')}`);
  }
  process.stderr.write('\n');
  await store.db.execute(sql`vacuum analyze deliveries`);
  await store.db.execute(sql`vacuum analyze attempts`);
}

/** Every statement's duration, to find the longest: on PGlite, how long one held the process. */
function timed(store: Store): { store: Store; longest: () => number; statements: () => number; reset: () => void } {
  let longest = 0;
  let statements = 0;
  const execute = store.db.execute.bind(store.db);
  const db = Object.create(store.db) as Store['db'];
  db.execute = (async (query: Parameters<typeof execute>[0]) => {
    const started = performance.now();
    try {
      return await execute(query);
    } finally {
      longest = Math.max(longest, performance.now() - started);
      statements += 1;
    }
  }) as typeof execute;
  return { store: { ...store, db }, longest: () => longest, statements: () => statements, reset: () => ((longest = 0), (statements = 0)) };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function measure(store: Store, label: string, ranges: Range[] = ['hour', 'day']): Promise<void> {
  const charts: [string, Counted, string, string][] = [
    ['receipts by decision', RECEIPTS_BY_DECISION, 'deliveries', 'received_at'],
    ['attempts by class', ATTEMPTS_BY_CLASS, 'attempts', 'started_at'],
  ];
  console.log(`\n${label}\n\n| chart | window | rows in it | median of 5 | ${store.kind === 'postgres' ? 'EXPLAIN ANALYZE' : 'longest statement (slices)'} |\n|---|---|---|---|---|`);
  for (const range of ranges) {
    const window = await windowOf(store.db, range);
    for (const [name, counted, table, column] of charts) {
      const [{ n }] = (await rowsOf<{ n: number }>(store.db, sql`select count(*)::int as n from ${sql.raw(table)} where ${sql.raw(column)} >= ${window.since.toISOString()}::timestamptz`)) as [{ n: number }];
      const probe = timed(store);
      const walls: number[] = [];
      const holds: number[] = [];
      for (let i = 0; i < 5; i++) {
        probe.reset();
        const started = performance.now();
        await countByBucket(probe.store, counted, window, store.kind === 'pglite' && options.slice ? options.slice : undefined);
        walls.push(performance.now() - started);
        holds.push(probe.longest());
      }
      let detail = `${median(holds).toFixed(1)} ms (${probe.statements()})`;
      if (store.kind === 'postgres') {
        const plan = await rowsOf<{ 'QUERY PLAN': string }>(store.db, sql`explain (analyze, buffers) ${bucketCountSql(counted, window, window.since, null)}`);
        const lines = plan.map((row) => row['QUERY PLAN']);
        const scan = lines.find((line) => /Scan on/.test(line))?.trim().replace(/\s+\(cost.*$/, '') ?? '?';
        detail = `${lines.find((line) => line.startsWith('Execution Time'))?.replace('Execution Time: ', '')}, ${scan}`;
      }
      console.log(`| ${name} | the last ${range} | ${n.toLocaleString('en')} | ${median(walls).toFixed(1)} ms | ${detail} |`);
    }
  }
}

async function main(): Promise<void> {
  const scratch = await openScratch('oncehook_charts', options);
  const { store } = scratch;
  try {
    const started = performance.now();
    await load(store, options.rows, options.days);
    console.log(`${store.kind}: ${options.rows.toLocaleString('en')} receipts and as many attempts over ${options.days} days, loaded in ${((performance.now() - started) / 1000).toFixed(0)} s`);
    await measure(store, 'With the time indexes (BRIN, migration 0017)');
    if (options.withoutIndex) {
      await store.db.execute(sql`drop index deliveries_received_idx`);
      await store.db.execute(sql`drop index attempts_started_idx`);
      // On PGlite each slice would read the whole table: the day's hundred slices take minutes, the hour shows it.
      await measure(store, 'Without them', store.kind === 'pglite' ? ['hour'] : ['hour', 'day']);
    }
  } finally {
    await scratch.close();
  }
}

await main();
