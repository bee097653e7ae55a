import { sql } from 'drizzle-orm';
import type { Store } from '../connect.ts';
import { minuteTally } from './minute-tally.ts';
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

/** The class of a reclaim's row, the one class a row leaves: a late result replaces it. */
export const RECLAIMED_CLASS = 'lease_expired';

/** That class, counted whole (attempt-tally.ts says why), by the index of its rows (migration 0028). */
const RECLAIMED = { key: RECLAIMED_CLASS, rows: sql`(select started_at from attempts where class = ${RECLAIMED_CLASS}) as reclaimed` };

/**
 * Attempts by class per bucket of a window, for the dashboard's home page: the ended ones counted per minute by
 * increments (minute-tally.ts), so a view costs the attempts ended since the last one, not the window's (the
 * figures: docs/performance.md); and those in flight, counted whole. One per process.
 */
export function attemptChart(store: Store): (window: Window) => Promise<Series> {
  const ended = minuteTally(store, { ...ATTEMPTS_BY_CLASS, leaving: RECLAIMED });
  return async (window) => {
    const [series, { counts }] = await Promise.all([ended(window), countByBucket(store, ATTEMPTS_IN_FLIGHT, window, Infinity)]);
    if (counts.open) series.counts.open = counts.open.map((n, i) => n + (series.counts.open?.[i] ?? 0));
    return series;
  };
}
