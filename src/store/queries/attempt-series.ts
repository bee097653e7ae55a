import { sql } from 'drizzle-orm';
import type { Store } from '../connect.ts';
import { countByBucket, type Counted, type Series, type Window } from './time-buckets.ts';

/**
 * Attempts by the time they started, with their class now, as `/api/stats` counts them. By start: the row is
 * written when the attempt ends (migration 0027), with the time of its claim, and attempts_started_idx (BRIN) finds a
 * window by it.
 */
export const ATTEMPTS_BY_CLASS: Counted = { table: sql`attempts`, at: sql`started_at`, key: sql`coalesce(class, 'open')` };

/**
 * The attempts in flight, by the claim their task notes (`open`): they have no row until they end. A few tasks, one a
 * worker's slot, so counted in one statement on either engine.
 */
export const ATTEMPTS_IN_FLIGHT: Counted = {
  table: sql`(select claimed_at from tasks where state = 'in_progress' and claim_kind is not null) as in_flight`,
  at: sql`claimed_at`,
  key: sql`'open'`,
};

/**
 * Attempts by class per bucket of `window`, for the dashboard's home page, through attempts_started_idx (BRIN,
 * migration 0017), so the cost follows the window's rows, not the table's (the figures: docs/performance.md); and
 * those in flight.
 */
export async function attemptsOverTime(store: Store, window: Window): Promise<Series> {
  const ended = await countByBucket(store, ATTEMPTS_BY_CLASS, window);
  const { counts } = await countByBucket(store, ATTEMPTS_IN_FLIGHT, window, Infinity);
  if (counts.open) ended.counts.open = counts.open.map((n, i) => n + (ended.counts.open?.[i] ?? 0));
  return ended;
}
