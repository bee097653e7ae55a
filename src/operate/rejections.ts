import { parseDuration } from '../config/duration.ts';
import { InputError } from '../errors.ts';
import type { Db } from '../store/connect.ts';
import { listRejections, type RejectionTally } from '../store/queries/rejections.ts';
import { MINUTES_KEPT, SAMPLES_KEPT } from '../store/rejection-log.ts';

/** How far back a look at refused requests goes unless asked otherwise. */
const DEFAULT_SINCE_MS = 60 * 60_000;

/** The requests ingest refused since a time, per source and reason, and what is kept of them. */
export interface RejectionsReport {
  since: string;
  /** What the counts and samples are bounded by: minutes of counts, and samples per source and reason. */
  kept: { minutes: number; samplesPerReason: number };
  items: RejectionTally[];
}

/**
 * `since` as a person writes it: a time (`2026-12-07T10:00:00Z`) or how long ago (`15m`, `6h`); by default the last
 * hour. Counts older than those kept are gone, so an earlier time reads as the oldest kept.
 */
export function rejectionsSince(text: string | undefined, now = Date.now()): Date {
  const oldest = now - MINUTES_KEPT * 60_000;
  if (text === undefined || text === '') return new Date(now - DEFAULT_SINCE_MS);
  const ago = parseDuration(text);
  const at = ago !== null ? now - ago : Date.parse(text);
  if (Number.isNaN(at)) throw new InputError('invalid_query', `since: "${text}" is neither a time (2026-12-07T10:00:00Z) nor a duration (15m, 6h)`);
  return new Date(Math.max(at, oldest));
}

export async function rejectionsReport(db: Db, filter: { source?: string | undefined; since: Date }): Promise<RejectionsReport> {
  return {
    since: filter.since.toISOString(),
    kept: { minutes: MINUTES_KEPT, samplesPerReason: SAMPLES_KEPT },
    items: await listRejections(db, filter),
  };
}
