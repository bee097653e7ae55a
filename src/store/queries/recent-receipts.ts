import { sql } from 'drizzle-orm';
import type { Db } from '../connect.ts';
import { rowsOf } from '../rows.ts';
import { RECEIPT_HEADERS } from './receipt-headers.ts';

/** A task as its receipt made it: what a config tried against the receipt is compared with. */
export interface MadeTask {
  id: string;
  action: string;
  bodySha256: string;
  requestUrl: string | null;
  transformError: string | null;
  /** Its key and position, for an action with `order`: `position` as the delivery gave it, null for arrival. */
  order: { key: string; mode: string; position: string | null } | null;
}

/** An accepted receipt as recorded, its kept bytes (null once retention purged them) and the tasks it made. */
export interface RecentReceipt {
  id: string;
  source: string;
  deliveryId: string;
  eventId: string;
  topic: string | null;
  contentType: string | null;
  bodySha256: string;
  headers: Record<string, string> | null;
  body: Uint8Array | null;
  tasks: MadeTask[];
}

/**
 * The newest `last` accepted receipts (of `source`, if given): the deliveries that reached planning, the ones a
 * config decides about. Duplicates made nothing and would make nothing. Walked newest first on the page index; the
 * tasks each made through task_refs' receipt index.
 */
export function recentReceipts(db: Db, { last, source }: { last: number; source?: string | undefined }): Promise<RecentReceipt[]> {
  return rowsOf<RecentReceipt>(
    db,
    sql`select d.id, d.source, d.delivery_id as "deliveryId", d.event_id as "eventId", d.topic, d.content_type as "contentType",
          d.body_sha256 as "bodySha256", ${RECEIPT_HEADERS} as headers, b.body,
          (select coalesce(json_agg(json_build_object('id', t.id, 'action', t.action, 'bodySha256', t.body_sha256,
              'requestUrl', t.request_url, 'transformError', t.transform_error,
              'order', case when t.order_key is not null then json_build_object('key', t.order_key, 'mode', t.order_mode, 'position', t.order_by) end)
              order by t.action), '[]')
           from task_refs r join tasks t on t.id = r.task_id where r.delivery_id = d.id) as tasks
        from deliveries d left join delivery_bodies b on b.delivery_id = d.id
        where d.decision = 'accepted' ${source === undefined ? sql`` : sql`and d.source = ${source}`}
        order by d.txid desc, d.seq desc limit ${last}`,
  );
}
