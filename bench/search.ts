/**
 * How long a content search (`GET /api/deliveries?match=`) takes among a million deliveries.
 *
 *   npx tsx bench/search.ts                   # PostgreSQL at 127.0.0.1:5432, 1,000,000 receipts with their bodies
 *   npx tsx bench/search.ts --pglite          # embedded PGlite in a temporary directory
 *   npx tsx bench/search.ts --rows 200000 --searches 200
 *   npx tsx bench/search.ts --ingest 20000    # instead: what keeping and indexing the bodies costs a receipt
 *
 * Fills a scratch database (`oncehook_search`, dropped at the end; PGlite's directory likewise) with receipts and
 * the bodies they carried — Shopify orders of about 600 bytes, an order ID each, a customer's in twenty, a SKU's in
 * two thousand — loaded without the content index, which is then built, as a migration builds it on an existing
 * history. Then times searchDeliveries, the API's own code, for a page of 50: random order IDs (the p50 and p95 of
 * `--searches`), a customer's, a SKU's, an operator no index answers (one bounded scan), and an order ID with a
 * source and decision; on PostgreSQL with the order ID's EXPLAIN ANALYZE, and the sizes of the table and its index.
 * `--ingest N` instead records N receipts through recordDeliveries, 128 to a transaction as ingest batches them, with the
 * content index, without it, and keeping no body: the time and, on PostgreSQL, the WAL a receipt.
 */
import { Command } from 'commander';
import { sql } from 'drizzle-orm';
import type { Filter } from '../src/shape/filter.ts';
import { bodyPathPredicate } from '../src/shape/filter-index.ts';
import { receiptId, sha256Hex } from '../src/ids.ts';
import { recordDeliveries, type ReceiptInput } from '../src/store/atomic/record.ts';
import type { Store } from '../src/store/connect.ts';
import { candidatesSql, searchDeliveries } from '../src/store/queries/delivery-search.ts';
import type { DeliveryFilter } from '../src/store/queries/deliveries.ts';
import { rowsOf } from '../src/store/rows.ts';
import { openScratch } from './scratch.ts';

const options = new Command()
  .option('--pg-url <url>', 'a PostgreSQL server to make the scratch database on', 'postgres://postgres@127.0.0.1:5432/postgres')
  .option('--pglite', 'embedded PGlite instead')
  .option('--rows <n>', 'receipts, each with its body', (v) => Number(v), 1_000_000)
  .option('--searches <n>', 'random order IDs searched for the percentiles', (v) => Number(v), 100)
  .option('--keep', 'leave the scratch database for another run (PostgreSQL)')
  .option('--reuse', 'search the database a run with --keep left, loading nothing')
  .option('--ingest <n>', 'receipts recorded through ingest\'s statement, with the content index and without', (v) => Number(v), 0)
  .parse()
  .opts<{ pgUrl: string; pglite?: boolean; rows: number; searches: number; ingest: number; keep?: boolean; reuse?: boolean }>();

const CHUNK = 50_000;
const PAGE = { limit: 50, order: 'desc' as const };

/** The receipts and their bodies, in chunks so PGlite is never asked for millions of rows in one statement. */
async function load(store: Store, rows: number): Promise<void> {
  await store.db.execute(sql`drop index delivery_bodies_json_idx`);
  for (let from = 1; from <= rows; from += CHUNK) {
    const to = Math.min(rows, from + CHUNK - 1);
    await store.db.execute(sql`insert into deliveries (id, source, delivery_id, event_id, topic, received_at, decision, headers, content_type, body_sha256, body_bytes)
      select 'd_s_' || g, case when g % 10 = 0 then 'outlet' else 'shop' end, 'wh_' || g, 'ev_' || g, 'orders/create',
        now() - make_interval(secs => ${rows} - g), case when g % 50 = 0 then 'duplicate_task' else 'accepted' end,
        '{"content-type":"application/json"}'::jsonb, 'application/json', md5(g::text) || md5(g::text), 600
      from generate_series(${from}::int, ${to}::int) g order by g`);
    await store.db.execute(sql`insert into delivery_bodies (delivery_id, body)
      select 'd_s_' || g, convert_to(jsonb_build_object(
          'id', 5000000000 + g, 'order_number', 1000 + g, 'email', 'buyer' || g || '@example.com',
          'total_price', to_char((g % 40000) / 100.0, 'FM99990.00'), 'currency', 'EUR', 'financial_status', 'paid',
          'created_at', to_char(now() - make_interval(secs => ${rows} - g), 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
          'customer', jsonb_build_object('id', 700000 + (g / 20), 'email', 'buyer' || (g / 20) || '@example.com', 'tags', 'vip'),
          'line_items', jsonb_build_array(
            jsonb_build_object('sku', 'SKU-' || (g % 500), 'quantity', 1 + g % 3, 'price', '19.90', 'title', 'A thing'),
            jsonb_build_object('sku', 'SKU-' || (g % 499 + 500), 'quantity', 1, 'price', '5.00', 'title', 'Another thing')),
          'shipping_address', jsonb_build_object('city', 'Lyon', 'zip', '69001', 'country_code', 'FR'))::text, 'UTF8')
      from generate_series(${from}::int, ${to}::int) g order by g`);
    process.stderr.write(`\rloaded ${to.toLocaleString('en')} of ${rows.toLocaleString('en')}`);
  }
  process.stderr.write('\n');
  const started = performance.now();
  await store.db.execute(sql`create index delivery_bodies_json_idx on delivery_bodies using gin (oncehook_body_json(body) jsonb_path_ops)`);
  console.log(`content index built in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  await store.db.execute(sql`vacuum analyze deliveries`);
  await store.db.execute(sql`vacuum analyze delivery_bodies`);
}

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

async function timeSearch(store: Store, match: Filter, filter: DeliveryFilter = {}): Promise<{ ms: number; found: number; partial: boolean }> {
  const started = performance.now();
  const page = await searchDeliveries(store.db, filter, match, PAGE);
  return { ms: performance.now() - started, found: page.items.length, partial: page.partial };
}

async function measure(store: Store, rows: number, searches: number): Promise<void> {
  const orderId = () => 5000000000 + 1 + Math.floor(Math.random() * rows);
  if (store.kind === 'postgres') {
    for (const filter of [{}, { source: 'shop', decision: 'accepted' }]) {
      const predicate = bodyPathPredicate({ id: orderId() })!;
      const narrowing = [sql`oncehook_body_json(b.body) @@ ${predicate}::jsonpath`];
      const plan = await rowsOf<{ 'QUERY PLAN': string }>(store.db, sql`explain (analyze, buffers) ${candidatesSql(filter, narrowing, { ...PAGE, limit: 199 }, [])}`);
      console.log(`\n${plan.map((row) => row['QUERY PLAN']).join('\n')}`);
    }
  }
  // Warm the caches a person's first search would find warm after a few.
  for (let i = 0; i < 10; i++) await timeSearch(store, { body: { id: orderId() } });
  const walls: number[] = [];
  for (let i = 0; i < searches; i++) walls.push((await timeSearch(store, { body: { id: orderId() } })).ms);
  console.log(`\n| search | found (page of 50) | time |\n|---|---|---|`);
  console.log(`| \`{"body":{"id":…}}\`, ${searches} random order IDs | 1 | p50 ${percentile(walls, 0.5).toFixed(1)} ms, p95 ${percentile(walls, 0.95).toFixed(1)} ms |`);
  const once: [string, Filter, DeliveryFilter][] = [
    // An order of the shop's, accepted: not a tenth (the outlet's), nor a fiftieth (duplicate_task).
    ['`{"body":{"id":…}}` with `source=shop&decision=accepted`', { body: { id: 5000000003 + 10 * Math.floor(Math.random() * (rows / 10 - 1)) } }, { source: 'shop', decision: 'accepted' }],
    ['`{"body":{"customer":{"id":…}}}`: a customer\'s 20 orders', { body: { customer: { id: 700000 + Math.floor(rows / 40) } } }, {}],
    ['`{"body":{"line_items":{"sku":"SKU-7"}}}`: 1 in 500', { body: { line_items: { sku: 'SKU-7' } } }, {}],
    ['`{"body":{"total_price":"123.45"}}`: 1 in 40,000', { body: { total_price: '123.45' } }, {}],
    ['`{"body":{"total_price":{"$gt":399}}}`: no index, a scan', { body: { total_price: { $gt: 399 } } }, {}],
    ['`{"body":{"total_price":{"$gt":1000}}}`: no index, nothing matches', { body: { total_price: { $gt: 1000 } } }, {}],
  ];
  for (const [label, match, filter] of once) {
    const runs = [];
    for (let i = 0; i < 5; i++) runs.push(await timeSearch(store, match, filter));
    const last = runs.at(-1)!;
    console.log(`| ${label} | ${last.found}${last.partial ? ' (partial: the scan stopped at its bound)' : ''} | median of 5 ${percentile(runs.map((r) => r.ms), 0.5).toFixed(1)} ms |`);
  }
  if (store.kind === 'postgres') {
    const [sizes] = await rowsOf<Record<string, string>>(
      store.db,
      sql`select pg_size_pretty(pg_table_size('delivery_bodies')) as bodies, pg_size_pretty(pg_relation_size('delivery_bodies_json_idx')) as "content index",
            pg_size_pretty(pg_table_size('deliveries')) as deliveries`,
    );
    console.log(`\nsizes: ${JSON.stringify(sizes)}`);
  }
}

/** A receipt as ingest records it, with a body like the loaded ones and no task (its actions filtered it). */
function receipt(n: number): ReceiptInput {
  const body = new TextEncoder().encode(
    JSON.stringify({ id: 9000000000 + n, order_number: n, email: `buyer${n}@example.com`, total_price: '19.90', currency: 'EUR',
      customer: { id: n, email: `buyer${n}@example.com`, tags: 'vip' }, line_items: [{ sku: `SKU-${n % 500}`, quantity: 1, price: '19.90', title: 'A thing' }],
      shipping_address: { city: 'Lyon', zip: '69001', country_code: 'FR' }, created_at: new Date().toISOString() }),
  );
  return { id: receiptId(), source: 'shop', deliveryId: `in-${n}-${Math.random()}`, eventId: `in-${n}-${Math.random()}`, topic: 'orders/create', occurredAt: null,
    headers: { 'content-type': 'application/json' }, contentType: 'application/json', body, bodySha256: sha256Hex(body), tasks: [], skipped: [] };
}

async function measureIngest(store: Store, receipts: number): Promise<void> {
  const run = async (label: string) => {
    const wal = async () => (await rowsOf<{ lsn: string }>(store.db, sql`select pg_current_wal_lsn()::text as lsn`))[0]!.lsn;
    const walBefore = store.kind === 'postgres' ? await wal() : null;
    const started = performance.now();
    for (let from = 0; from < receipts; from += 128) {
      await recordDeliveries(store.db, Array.from({ length: Math.min(128, receipts - from) }, (_, i) => receipt(from + i)));
    }
    const micros = ((performance.now() - started) * 1000) / receipts;
    let walPer = '';
    if (walBefore !== null) {
      const [row] = await rowsOf<{ bytes: string }>(store.db, sql`select pg_wal_lsn_diff(pg_current_wal_lsn(), ${walBefore}::pg_lsn)::bigint as bytes`);
      walPer = `, ${(Number(row!.bytes) / receipts).toFixed(0)} bytes of WAL`;
    }
    console.log(`| ${label} | ${micros.toFixed(0)} µs${walPer} |`);
  };
  console.log(`\n| ${receipts.toLocaleString('en')} receipts recorded, 128 a transaction | a receipt |\n|---|---|`);
  await run('bodies kept, content index');
  await store.db.execute(sql`drop index delivery_bodies_json_idx`);
  await run('bodies kept, no content index');
  // As before bodies were kept, nearly: the statement is the same, and a trigger drops each row it would insert.
  await store.db.execute(sql`create function bench_keep_nothing() returns trigger language plpgsql as $$ begin return null; end $$`);
  await store.db.execute(sql`create trigger keep_nothing before insert on delivery_bodies for each row execute function bench_keep_nothing()`);
  await run('no body kept');
}

async function main(): Promise<void> {
  const scratch = await openScratch('oncehook_search', options);
  const { store } = scratch;
  try {
    if (options.ingest > 0) return await measureIngest(store, options.ingest);
    if (!options.reuse) {
      const started = performance.now();
      await load(store, options.rows);
      console.log(`${store.kind}: ${options.rows.toLocaleString('en')} receipts and their bodies, loaded in ${((performance.now() - started) / 1000).toFixed(0)} s`);
    }
    await measure(store, options.rows, options.searches);
  } finally {
    await scratch.close(options.keep);
  }
}

await main();
