/**
 * The refused requests a process counted (src/store/rejection-log.ts), added to what every instance counted: counts
 * add up per source, reason and minute; samples are cut to the newest few per source and reason. Both lose what is
 * older than the minutes kept, so no volume of refused requests grows either table past a fixed bound.
 */
import { sql } from 'drizzle-orm';
import type { Db } from '../connect.ts';
import { batchJson, rowsOf } from '../rows.ts';

export interface RejectionCount {
  /** The minute's start, ISO. */
  minute: string;
  source: string;
  reason: string;
  count: number;
}

export interface RejectionSample {
  source: string;
  reason: string;
  at: string;
  remoteAddress: string | null;
  headerNames: string[];
}

export async function addRejections(
  db: Db,
  counts: readonly RejectionCount[],
  samples: readonly RejectionSample[],
  keep: { samplesKept: number; minutesKept: number },
): Promise<void> {
  await rowsOf(
    db,
    sql`with added as (
          insert into rejection_counts (minute, source, reason, count)
          select minute, source, reason, count
          from json_to_recordset(${batchJson(counts)}::json) as r(minute timestamptz, source text, reason text, count bigint)
          -- The delete below does not see what this inserts: what it would delete is not inserted.
          where minute >= now() - make_interval(mins => ${keep.minutesKept})
          order by minute, source, reason
          on conflict (minute, source, reason) do update set count = rejection_counts.count + excluded.count
        ), sampled as (
          insert into rejection_samples (source, reason, at, remote_address, header_names)
          select source, reason, at, "remoteAddress", "headerNames"
          from json_to_recordset(${batchJson(samples)}::json) as r(source text, reason text, at timestamptz, "remoteAddress" text, "headerNames" jsonb)
          where at >= now() - make_interval(mins => ${keep.minutesKept})
        )
        delete from rejection_counts where minute < now() - make_interval(mins => ${keep.minutesKept})`,
  );
  // A statement of its own: the one above cannot see the samples it inserts. The table holds a few rows a pair.
  await rowsOf(
    db,
    sql`delete from rejection_samples s using (
          select id, row_number() over (partition by source, reason order by at desc, id desc) as n, at from rejection_samples
        ) r
        where s.id = r.id and (r.n > ${keep.samplesKept} or r.at < now() - make_interval(mins => ${keep.minutesKept}))`,
  );
}
