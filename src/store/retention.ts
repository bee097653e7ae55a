import { sql } from 'drizzle-orm';
import type { Db } from './connect.ts';
import { FINISHED_STATES } from './decisions.ts';
import { rowsOf } from './rows.ts';
import { inList } from './queries/task-filter.ts';

/** Where a round's last batch ended, in `tasks_purge_idx`'s order: the next batch reads on from there. */
export interface PurgeCursor {
  /** A timestamptz as PostgreSQL prints it, microseconds kept. */
  at: string;
  id: string;
}

export interface PurgedBatch {
  purged: number;
  /** Null when the batch found nothing. */
  last: PurgeCursor | null;
}

/**
 * Drops the stored body of up to `batchSize` finished tasks of `source` whose last change (their finish, for
 * almost every one) is older than the source's retention, after `after` in `tasks_purge_idx`'s order. A task
 * that waited a month for a person and then failed keeps its bytes for a retry for the whole retention. The
 * dedup keys and the task rows (with the body's hash) stay as tombstones, so a late redelivery is still
 * recognised. `updated_at` is left as it was: the task did not change, only its stored copy went. SKIP LOCKED:
 * a row someone is working on waits for the next round, which starts from the beginning of the index again.
 */
export async function purgeExpiredBodies(
  db: Db,
  source: string,
  retentionMs: number,
  batchSize: number,
  after: PurgeCursor | null = null,
): Promise<PurgedBatch> {
  const [row] = await rowsOf<{ purged: number; at: string | null; id: string | null }>(db, purgeBatchSql(source, retentionMs, batchSize, after));
  return { purged: row!.purged, last: row!.at === null || row!.id === null ? null : { at: row!.at, id: row!.id } };
}

/** The statement of one batch: exported for the query plan test. */
export const purgeBatchSql = (source: string, retentionMs: number, batchSize: number, after: PurgeCursor | null) => sql`
    with expired as (
      select id, updated_at from tasks
      where source = ${source}
        and body is not null
        and state in ${inList(FINISHED_STATES)}
        and updated_at < now() - make_interval(secs => ${retentionMs / 1000})
        and (updated_at, id) > (${after?.at ?? '-infinity'}::timestamptz, ${after?.id ?? ''})
      order by updated_at, id
      limit ${batchSize}
      for update skip locked
    ),
    purged as (
      update tasks set body = null, source_body = null from expired where tasks.id = expired.id returning tasks.id
    ),
    last as (
      select updated_at::text as at, id from expired order by updated_at desc, id desc limit 1
    )
    select (select count(*)::int from purged) as purged, (select at from last) as at, (select id from last) as id`;
