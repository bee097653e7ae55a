import { sql } from 'drizzle-orm';
import type { Db } from '../connect.ts';
import { PREPARED } from '../prepared.ts';
import { batchJson, rowsOf } from '../rows.ts';

export interface DedupKey {
  source: string;
  deliveryId: string;
  eventId: string;
}

/**
 * For each receipt about to be recorded: whether its delivery key or its event key is recorded already. Then it
 * can only be a duplicate (`duplicate_delivery` or `duplicate_event`): the keys are never deleted — retention purges
 * bodies and leaves them — so ingest records it without running its filters and transforms. Only a hint: the record
 * (record.ts) still decides, and refuses a receipt so marked that turns out new. A key recorded after this read is
 * missed, and only costs the transforms.
 *
 * One statement for a batch of receipts (known-receipts.ts gathers a turn's): a lookup by primary key per receipt,
 * in the select list, so that it stays one however the planner judges the batch's size.
 */
export async function knownKeys(db: Db, keys: readonly DedupKey[]): Promise<boolean[]> {
  if (keys.length === 0) return [];
  const batch = keys.map(({ source, deliveryId, eventId }, n) => ({ n, source, delivery_id: deliveryId, event_id: eventId }));
  const [row] = await rowsOf<{ known: boolean[] | null }>(
    db,
    sql`${PREPARED}select json_agg(known order by n) as known from (
      select x.n,
        exists (select from delivery_keys k where k.source = x.source and k.delivery_id = x.delivery_id)
        or exists (select from event_keys e where e.source = x.source and e.event_id = x.event_id) as known
      from json_to_recordset(${batchJson(batch)}::json) as x(n int, source text, delivery_id text, event_id text)
    ) keys`,
  );
  return row!.known ?? keys.map(() => false);
}
