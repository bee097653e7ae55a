import { sql } from 'drizzle-orm';
import { customType } from 'drizzle-orm/pg-core';

/**
 * The ID of the transaction that inserted a row (`pg_current_xact_id()`). Admin cursors page on it: every
 * row of a transaction older than the oldest one still running is committed, so pages below that horizon
 * neither skip a late commit nor repeat a row (src/store/queries/cursor.ts). The tallies count by it too
 * (src/store/queries/increments.ts).
 */
const insertingTransaction = customType<{ data: string; driverData: string }>({ dataType: () => 'xid8' });
export const txid = () => insertingTransaction('txid').notNull().default(sql`pg_current_xact_id()`);
