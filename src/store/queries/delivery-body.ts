import { sql } from 'drizzle-orm';
import type { Db } from '../connect.ts';
import { rowsOf } from '../rows.ts';

/** The first bytes of a receipt's kept body, and how many it has in all. */
export interface BodyHead {
  head: Uint8Array;
  bytes: number;
}

/**
 * The bytes a receipt carried, at most `maxBytes` of them: its own kept copy, or, for a duplicate_delivery (which
 * keeps none), that of the receipt it repeats when the two hashes agree. Null once retention purged them.
 */
export async function receiptBody(db: Db, id: string, maxBytes: number): Promise<BodyHead | null> {
  const [row] = await rowsOf<BodyHead>(
    db,
    sql`with recursive chain as (
          select d.id, d.matched_delivery_id, d.body_sha256, 0 as depth from deliveries d where d.id = ${id}
          union all
          select d.id, d.matched_delivery_id, d.body_sha256, c.depth + 1
          from deliveries d join chain c on d.id = c.matched_delivery_id
          where c.depth < 8 and d.body_sha256 = c.body_sha256
        )
        select substring(b.body from 1 for ${maxBytes}) as head, octet_length(b.body) as bytes
        from chain c join delivery_bodies b on b.delivery_id = c.id
        order by c.depth limit 1`,
  );
  return row ? { head: row.head, bytes: Number(row.bytes) } : null;
}
