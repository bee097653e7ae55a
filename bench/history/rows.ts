/**
 * A finished history written in SQL, row for row what ingest and the forwarder leave behind: for each number `g` an
 * accepted receipt of a Shopify order with its delivery and event keys, its task succeeded, and its attempt; every
 * tenth order delivered twice (a `duplicate_delivery` receipt, no task); every fiftieth task answered 503 once and
 * sent again half a minute later. Receipts and attempts are inserted in time order, as they arrive. Where retention
 * would have purged them (older than `keepFrom`), a task has no body and a receipt no headers nor stored bytes.
 *
 * Pure: the statements for one slice of numbers, their times spread evenly over `[from, to)` of the whole range.
 * The numbers and times are the only values in them.
 */

export interface HistorySlice {
  /** The numbers of this slice, inclusive. */
  first: number;
  last: number;
  /** The whole range the times are spread over: `rangeFirst` at `fromMs`, one past `rangeLast` at `toMs`. */
  rangeFirst: number;
  rangeLast: number;
  fromMs: number;
  toMs: number;
  /** Rows older than this (ms since the epoch) are past retention: their bodies and headers purged. */
  keepFromMs: number;
}

export const DAY_MS = 86_400_000;
/** The days the history spans; the last one is written into each copy of the template (template.ts). */
export const HISTORY_DAYS = 30;
/** Bodies and headers are kept for the last week, as a source with a 7-day retention would have them. */
export const KEPT_DAYS = 7;

/** The share of orders delivered twice, and of tasks that needed a second attempt, as `g % n = 0`. */
export const REPEATED_EVERY = 10;
export const RETRIED_EVERY = 50;

const int = (n: number) => {
  if (!Number.isSafeInteger(n)) throw new Error(`not an integer: ${n}`);
  return String(n);
};

/** The statements for one slice, to run in order in one transaction. */
export function historyStatements(s: HistorySlice): string[] {
  const span = int(s.rangeLast - s.rangeFirst + 1);
  // Each number's time; the receipt IDs sort by it, as `receiptId` makes them.
  const at = `to_timestamp((${int(s.fromMs)} + (g - ${int(s.rangeFirst)})::float8 * ${int(s.toMs - s.fromMs)} / ${span}) / 1000.0)`;
  const numbers = `select g, ${at} as at, ${at} >= to_timestamp(${int(s.keepFromMs)} / 1000.0) as kept,
      lpad(to_hex(g), 12, '0') as hex from generate_series(${int(s.first)}::bigint, ${int(s.last)}::bigint) g`;
  // A Shopify order of ~500 bytes, as bench/deliveries.ts makes them; its customer one of a thousand.
  const body = `convert_to(jsonb_build_object('id', 'hist-' || g, 'customer', jsonb_build_object('id', g % 1000),
      'email', 'jon@example.com', 'created_at', '2026-01-01T12:00:00-05:00', 'currency', 'USD', 'total_price', '199.65',
      'financial_status', 'paid', 'line_items', jsonb_build_array(jsonb_build_object('id', 866550311766439000, 'sku', 'IPOD-342-N',
      'quantity', 1, 'price', '199.00')), 'note', repeat('x', 230))::text, 'UTF8')`;
  const orders = `with n as (${numbers}) select n.*, b.body, encode(sha256(b.body), 'hex') as sha,
      'd_' || lpad(to_hex((extract(epoch from n.at) * 1000)::bigint), 11, '0') || 'b15t0' || n.hex as receipt,
      'd_' || lpad(to_hex((extract(epoch from n.at) * 1000)::bigint + 2000), 11, '0') || 'b15t1' || n.hex as repeat,
      'wh-' || md5('w' || g) as webhook, 'hist-' || g as event, 't_' || md5('t' || g) as task
    from n cross join lateral (select ${body} as body) b`;
  const headers = (webhook: string) => `jsonb_build_object('content-type', 'application/json', 'x-shopify-hmac-sha256', '[redacted]',
      'x-shopify-webhook-id', ${webhook}, 'x-shopify-topic', 'orders/create', 'x-shopify-shop-domain', 'bench.myshopify.com',
      'x-shopify-triggered-at', '2026-01-01T17:00:00.000Z')`;
  return [
    `create temporary table slice on commit drop as ${orders}`,
    `insert into deliveries (id, source, delivery_id, event_id, topic, occurred_at, received_at, decision, matched_delivery_id,
       headers, content_type, body_sha256, body_bytes)
     select id, 'shop', webhook, event, 'orders/create', at - interval '1 second', received, decision, matched,
       case when kept then ${headers('webhook')} end, 'application/json', sha, length(body)
     from (
       select receipt as id, webhook, event, at, at as received, 'accepted' as decision, null as matched, kept, sha, body from slice
       union all
       select repeat, webhook, event, at, at + interval '2 seconds', 'duplicate_delivery', receipt, kept, sha, body
       from slice where g % ${REPEATED_EVERY} = 0
     ) r order by received`,
    `insert into delivery_keys (source, delivery_id, first_delivery, first_seen_at) select 'shop', webhook, receipt, at from slice`,
    `insert into event_keys (source, event_id, first_delivery, first_seen_at) select 'shop', event, receipt, at from slice`,
    `insert into delivery_bodies (delivery_id, body) select receipt, body from slice where kept`,
    `insert into tasks (id, source, action, event_id, topic, delivery_id, state, body, content_type, body_sha256, attempts,
       claims, next_attempt_at, first_attempt_at, created_at, updated_at)
     select task, 'shop', 'crm', event, 'orders/create', receipt, 'succeeded', case when kept then body end, 'application/json', sha,
       case when g % ${RETRIED_EVERY} = 0 then 2 else 1 end, case when g % ${RETRIED_EVERY} = 0 then 2 else 1 end, at,
       at + interval '50 ms', at,
       at + case when g % ${RETRIED_EVERY} = 0 then interval '30.1 seconds' else interval '100 ms' end
     from slice order by at`,
    `insert into attempts (task_id, claim, number, kind, started_at, finished_at, request_sha256, response_status, duration_ms, class,
       error, decision)
     select task, number, number, 'send', started, started + interval '40 ms', sha, status, 40, class, error, decision
     from (
       select task, 1 as number, at + interval '50 ms' as started, sha,
         case when g % ${RETRIED_EVERY} = 0 then 503 else 200 end as status,
         case when g % ${RETRIED_EVERY} = 0 then 'retryable' else 'success' end as class,
         case when g % ${RETRIED_EVERY} = 0 then '503 Service Unavailable' end as error,
         case when g % ${RETRIED_EVERY} = 0 then 'retry with backoff' else 'succeeded' end as decision
       from slice
       union all
       select task, 2, at + interval '30 seconds', sha, 200, 'success', null, 'succeeded' from slice where g % ${RETRIED_EVERY} = 0
     ) a order by started`,
  ];
}
