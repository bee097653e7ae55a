import { sql } from 'drizzle-orm';

/**
 * The headers of the receipt read as `d`: its own, or those of its request's first receipt, which alone stores them
 * for a batch's events (migration 0020). Null once retention purged them.
 */
export const RECEIPT_HEADERS = sql`coalesce(d.headers, (select h.headers from deliveries h where h.id = d.headers_from))`;
