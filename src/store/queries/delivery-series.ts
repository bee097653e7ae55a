import { sql } from 'drizzle-orm';
import type { Store } from '../connect.ts';
import { countByBucket, type Counted, type Series, type Window } from './time-buckets.ts';

export const RECEIPTS_BY_DECISION: Counted = { table: sql`deliveries`, at: sql`received_at`, key: sql`decision` };

/**
 * Receipts by decision per bucket of `window`, for the dashboard's home page: found through
 * deliveries_received_idx (BRIN, migration 0017), so the cost follows the window's rows, not the table's (the
 * figures: docs/performance.md).
 */
export function deliveriesOverTime(store: Store, window: Window): Promise<Series> {
  return countByBucket(store, RECEIPTS_BY_DECISION, window);
}
