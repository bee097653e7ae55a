import { sql } from 'drizzle-orm';
import type { Store } from '../connect.ts';
import { minuteTally } from './minute-tally.ts';
import type { Counted, Series, Window } from './time-buckets.ts';

export const RECEIPTS_BY_DECISION: Counted = { table: sql`deliveries`, at: sql`received_at`, key: sql`decision` };

/**
 * Receipts by decision per bucket of a window, for the dashboard's home page: counted per minute by increments
 * (minute-tally.ts), so a view costs the receipts recorded since the last one, not the window's (the figures:
 * docs/performance.md). A receipt's decision and time are written once. One per process.
 */
export function deliveryChart(store: Store): (window: Window) => Promise<Series> {
  return minuteTally(store, RECEIPTS_BY_DECISION);
}
