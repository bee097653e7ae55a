import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../connect.ts';
import { otherDatabasesXids, pageClauses, toPage, type Page, type PageRequest } from './cursor.ts';
import { rowsOf } from '../rows.ts';
import type { SkippedAction } from '../schema.ts';
import { RECEIPT_HEADERS } from './receipt-headers.ts';

export interface DeliveryFilter {
  source?: string | undefined;
  decision?: string | undefined;
  eventId?: string | undefined;
  deliveryId?: string | undefined;
}

export interface DeliveryRow {
  id: string;
  source: string;
  deliveryId: string;
  eventId: string;
  topic: string | null;
  receivedAt: Date;
  decision: string;
  matchedDeliveryId: string | null;
  bodyBytes: number;
  /**
   * The tasks this receipt made, replays of them included: 0 for an `accepted` one whose every action was filtered
   * or off-topic, and for a duplicate, whose tasks are its origin's.
   */
  taskCount: number;
  /** Why actions made no task of it (each reason once): `filtered`, `topic`; empty when each made one. */
  skippedReasons: SkippedAction['reason'][];
}

/**
 * Counted through task_refs' receipt index: a few entries a receipt, where tasks keeps no index on it. `skipped` is
 * read only when it is a list: a receipt may hold SQL NULL or a JSON null there, which jsonb_to_recordset refuses.
 */
export const columns = sql`d.id, d.source, d.delivery_id as "deliveryId", d.event_id as "eventId", d.topic,
  d.received_at as "receivedAt", d.decision, d.matched_delivery_id as "matchedDeliveryId", d.body_bytes as "bodyBytes",
  (select count(*)::int from task_refs r where r.delivery_id = d.id) as "taskCount",
  (select coalesce(jsonb_agg(distinct s.reason order by s.reason), '[]'::jsonb)
   from jsonb_to_recordset(case when jsonb_typeof(d.skipped) = 'array' then d.skipped else '[]'::jsonb end) as s(reason text)) as "skippedReasons"`;

export async function listDeliveries(db: Db, filter: DeliveryFilter, request: PageRequest): Promise<Page<DeliveryRow>> {
  const rows = await rowsOf<DeliveryRow & { cursorTxid: string; cursorTiebreak: string }>(
    db,
    listDeliveriesSql(filter, request, await otherDatabasesXids(db)),
  );
  return toPage(rows.map(withDates), request);
}

/** One page of receipts; `others` are the other databases' transactions (otherDatabasesXids). */
export function listDeliveriesSql(filter: DeliveryFilter, request: PageRequest, others: readonly string[]): SQL {
  const page = pageClauses(request, sql`d.txid`, sql`d.seq`, 'bigint', others);
  const where = [page.where];
  if (filter.source !== undefined) where.push(sql`d.source = ${filter.source}`);
  if (filter.decision !== undefined) where.push(sql`d.decision = ${filter.decision}`);
  if (filter.eventId !== undefined) where.push(sql`d.event_id = ${filter.eventId}`);
  if (filter.deliveryId !== undefined) where.push(sql`d.delivery_id = ${filter.deliveryId}`);
  return sql`select ${columns}, d.txid::text as "cursorTxid", d.seq::text as "cursorTiebreak"
      from deliveries d where ${sql.join(where, sql` and `)}
      order by ${page.orderBy} limit ${page.limit}`;
}

export interface RelatedTask {
  id: string;
  action: string;
  state: string;
  resultReference: string | null;
  lastError: string | null;
  owner: string | null;
}

export interface DeliveryView extends DeliveryRow {
  occurredAt: Date | null;
  /** As the request carried them, redacted; null once retention purged them with the bodies. */
  headers: Record<string, string> | null;
  contentType: string | null;
  bodySha256: string;
  /** The earlier receipt this one repeated (duplicates only). */
  matched: DeliveryRow | null;
  /** The receipt that created the tasks this delivery is about, following duplicates back to it. */
  origin: DeliveryRow | null;
  /** Those tasks, as they stand now. */
  tasks: RelatedTask[];
  /** Later receipts that were decided as repeats of this one. */
  repeats: DeliveryRow[];
  /** The actions that made no task of this delivery, and why (a topic, a filter); empty when each made one. */
  skipped: SkippedAction[];
}

/** The tasks a receipt created, found through task_refs: tasks keeps no index on the receipt. */
export const tasksOfReceiptSql = (receipt: string): SQL =>
  sql`select t.id, t.action, t.state, t.result_reference as "resultReference", t.last_error as "lastError", t.owner
      from task_refs r join tasks t on t.id = r.task_id where r.delivery_id = ${receipt} order by t.action`;

/** One receipt, with what its decision was measured against and the tasks it is about. */
export async function deliveryView(db: Db, id: string): Promise<DeliveryView | null> {
  const [delivery] = await rowsOf<DeliveryView>(
    db,
    sql`select ${columns}, d.occurred_at as "occurredAt", ${RECEIPT_HEADERS} as headers, d.content_type as "contentType", d.body_sha256 as "bodySha256",
          coalesce(d.skipped, '[]'::jsonb) as skipped
        from deliveries d where d.id = ${id}`,
  );
  if (!delivery) return null;
  // A duplicate_event may point at a receipt that was itself a duplicate_task: follow the chain to the
  // receipt that created the tasks (depth-bounded: each link points strictly earlier).
  const chain = await rowsOf<DeliveryRow>(
    db,
    sql`with recursive chain as (
          select d.*, 0 as depth from deliveries d where d.id = ${delivery.matchedDeliveryId ?? id}
          union all
          select d.*, c.depth + 1 from deliveries d join chain c on d.id = c.matched_delivery_id
          where c.decision <> 'accepted' and c.depth < 8
        )
        select ${columns} from chain d order by d.depth`,
  );
  const origin = chain.find((row) => row.decision === 'accepted') ?? null;
  const [tasks, repeats] = await Promise.all([
    origin
      ? rowsOf<RelatedTask>(db, tasksOfReceiptSql(origin.id))
      : Promise.resolve([]),
    rowsOf<DeliveryRow>(db, sql`select ${columns} from deliveries d where d.matched_delivery_id = ${id} order by d.seq limit 50`),
  ]);
  return {
    ...withDates(delivery),
    occurredAt: delivery.occurredAt ? new Date(delivery.occurredAt) : null,
    matched: delivery.matchedDeliveryId ? (chain[0] ? withDates(chain[0]) : null) : null,
    origin: origin ? withDates(origin) : null,
    tasks,
    repeats: repeats.map(withDates),
  };
}

/** Raw SQL returns timestamps as strings on one driver and Dates on the other. */
export function withDates<T extends { receivedAt: Date }>(row: T): T {
  return { ...row, receivedAt: new Date(row.receivedAt) };
}
