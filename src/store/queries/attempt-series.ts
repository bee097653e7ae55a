import { sql } from 'drizzle-orm';
import type { Store } from '../connect.ts';
import { countByBucket, type Counted, type Series, type Window } from './time-buckets.ts';

/**
 * Attempts by the time they started, with their class now (`open`: still in flight), as `/api/stats` counts
 * them. By start, not finish: `started_at` is never updated, so its index leaves the finish a HOT update
 * (migration 0003), where one on `finished_at` would make every finish write every index of the table again.
 */
export const ATTEMPTS_BY_CLASS: Counted = { table: sql`attempts`, at: sql`started_at`, key: sql`coalesce(class, 'open')` };

/**
 * Attempts by class per bucket of `window`, for the dashboard's home page, through attempts_started_idx (BRIN,
 * migration 0017), so the cost follows the window's rows, not the table's (the figures: docs/performance.md).
 */
export function attemptsOverTime(store: Store, window: Window): Promise<Series> {
  return countByBucket(store, ATTEMPTS_BY_CLASS, window);
}
