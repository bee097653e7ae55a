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

export interface HeadersBatch {
  purged: number;
  /** Where the batch ended; null when it read fewer receipts than it could, so the source's turn is over. */
  next: PurgeCursor | null;
}

/**
 * Drops the stored headers of up to `batchSize` receipts of `source` received longer ago than its retention, after
 * `after` in `deliveries_headers_purge_idx`'s order, and the bytes kept for a person to read of them and of the other
 * events of their request (delivery_bodies): with the bodies they came with, so not while a task of the
 * request (this receipt's, or another event's of its batch) still holds one, which a retry or a replay shapes
 * again with the headers. A receipt that made no task (a duplicate, a handshake, a filtered event) holds none. The
 * receipt row and its dedup keys stay. The rows it reads and leaves are few: those whose tasks are not finished.
 */
export async function purgeExpiredHeaders(
  db: Db,
  source: string,
  retentionMs: number,
  batchSize: number,
  after: PurgeCursor | null = null,
): Promise<HeadersBatch> {
  const [row] = await rowsOf<{ purged: number; read: number; at: string | null; id: string | null }>(
    db,
    purgeHeadersSql(source, retentionMs, batchSize, after),
  );
  const next = row!.read < batchSize || row!.at === null || row!.id === null ? null : { at: row!.at, id: row!.id };
  return { purged: row!.purged, next };
}

/** The statement of one headers batch: exported for the query plan test. */
export const purgeHeadersSql = (source: string, retentionMs: number, batchSize: number, after: PurgeCursor | null) => sql`
    with expired as (
      select d.id, d.received_at from deliveries d
      where d.source = ${source}
        and d.headers is not null
        and d.received_at < now() - make_interval(secs => ${retentionMs / 1000})
        and (d.received_at, d.id) > (${after?.at ?? '-infinity'}::timestamptz, ${after?.id ?? ''})
      order by d.received_at, d.id
      limit ${batchSize}
    ),
    bodiless as (
      select e.id from expired e
      where not exists (
          select 1 from task_refs r join tasks t on t.id = r.task_id where r.delivery_id = e.id and t.body is not null)
        and not exists (
          select 1 from deliveries i join task_refs r on r.delivery_id = i.id join tasks t on t.id = r.task_id
          where i.headers_from = e.id and t.body is not null)
    ),
    purged as (
      update deliveries d set headers = null from bodiless b where d.id = b.id returning d.id
    ),
    bodies as (
      delete from delivery_bodies k where k.delivery_id in (
        select id from purged union all select i.id from deliveries i join purged p on i.headers_from = p.id)
    ),
    last as (
      select received_at::text as at, id from expired order by received_at desc, id desc limit 1
    )
    select (select count(*)::int from purged) as purged, (select count(*)::int from expired) as read,
      (select at from last) as at, (select id from last) as id`;
