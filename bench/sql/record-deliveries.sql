-- The ingest function alone: database time per receipt, without HTTP, the gateway or commits.
-- Run against a scratch database that `oncehook migrate` has set up (it adds receipts and tasks):
--   createdb -h 127.0.0.1 -U postgres scratch
--   DATABASE_URL=postgres://postgres@127.0.0.1:5432/scratch node bin/oncehook.js migrate
--   psql -h 127.0.0.1 -U postgres -d scratch -v batch=16 -f bench/sql/record-deliveries.sql
-- Each run records 60 fresh batches of :batch receipts (one task each) and times the last 50.
\if :{?batch}
\else
\set batch 128
\endif
CREATE OR REPLACE FUNCTION pg_temp.shopify_batch(run text, n int) RETURNS json LANGUAGE sql AS $$
  SELECT json_agg(json_build_object('i', g, 'id', 'r_' || run || '_' || g, 'source', 'shop',
    'delivery_id', 'd_' || run || '_' || g, 'event_id', 'e_' || run || '_' || g, 'topic', 'orders/create',
    'occurred_at', now(), 'headers', json_build_object('content-type', 'application/json',
      'user-agent', 'Shopify-Captain-Hook', 'x-shopify-topic', 'orders/create',
      'x-shopify-shop-domain', 'example.myshopify.com', 'x-shopify-webhook-id', 'd_' || run || '_' || g,
      'x-shopify-event-id', 'e_' || run || '_' || g, 'x-shopify-triggered-at', '2026-11-30T00:00:00Z',
      'x-shopify-api-version', '2025-01', 'x-shopify-hmac-sha256', '[redacted]', 'host', '127.0.0.1',
      'content-length', '500'),
    'content_type', 'application/json', 'body', encode(convert_to(repeat('x', 500), 'UTF8'), 'base64'),
    'body_sha256', md5(run || g), 'body_bytes', 500,
    'tasks', json_build_array(json_build_object('id', 't_' || run || '_' || g, 'action', 'crm',
      'state', 'pending', 'after_task_id', NULL))) ORDER BY g)
  FROM generate_series(0, n - 1) g $$;
SELECT set_config('bench.batch', :'batch', false);
DO $$
DECLARE
  size int := current_setting('bench.batch')::int;
  run text := to_hex((extract(epoch FROM clock_timestamp()) * 1e6)::bigint);
  batch json;
  started timestamptz;
  spent interval := '0';
BEGIN
  FOR k IN 1..60 LOOP
    batch := pg_temp.shopify_batch(run || '_' || k, size);
    started := clock_timestamp();
    PERFORM oncehook_record_deliveries(batch, 'oncehook_bench');
    IF k > 10 THEN spent := spent + (clock_timestamp() - started); END IF;
  END LOOP;
  RAISE NOTICE 'batches of %: % ms per batch, % µs per receipt', size,
    round(extract(epoch FROM spent) * 1000 / 50, 2), round(extract(epoch FROM spent) * 1e6 / 50 / size);
END $$;
