import { sql } from 'drizzle-orm';
import type { Db } from '../connect.ts';
import { rowsOf } from '../rows.ts';

export interface RejectionSampleView {
  at: string;
  reason: string;
  remoteAddress: string | null;
  headerNames: string[];
}

/** Refused requests of one source for one reason: in all since the time asked, per minute, and the latest few. */
export interface RejectionTally {
  source: string;
  reason: string;
  total: number;
  /** Minutes with at least one, oldest first. */
  minutes: { minute: string; count: number }[];
  /** Newest first. */
  samples: RejectionSampleView[];
}

/** The requests ingest refused since `since`, per source and reason, the most refused first. */
export async function listRejections(db: Db, filter: { source?: string | undefined; since: Date }): Promise<RejectionTally[]> {
  const source = filter.source === undefined ? sql`true` : sql`source = ${filter.source}`;
  const since = filter.since.toISOString();
  const [counts, samples] = await Promise.all([
    rowsOf<{ source: string; reason: string; total: string | number; minutes: { minute: string; count: number }[] }>(
      db,
      sql`select source, reason, sum(count)::bigint as total,
            json_agg(json_build_object('minute', minute, 'count', count) order by minute) as minutes
          from rejection_counts where minute >= date_trunc('minute', ${since}::timestamptz) and ${source}
          group by source, reason order by total desc, source, reason`,
    ),
    rowsOf<RejectionSampleView & { source: string }>(
      db,
      sql`select source, reason, at, remote_address as "remoteAddress", header_names as "headerNames"
          from rejection_samples where at >= ${since}::timestamptz and ${source} order by at desc, id desc`,
    ),
  ]);
  return counts.map((row) => ({
    source: row.source,
    reason: row.reason,
    total: Number(row.total),
    minutes: row.minutes.map(({ minute, count }) => ({ minute: new Date(minute).toISOString(), count: Number(count) })),
    samples: samples
      .filter((sample) => sample.source === row.source && sample.reason === row.reason)
      .map(({ at, reason, remoteAddress, headerNames }) => ({ at: new Date(at).toISOString(), reason, remoteAddress, headerNames })),
  }));
}
