import { sql } from 'drizzle-orm';
import type { Db } from './connect.ts';
import { FINISHED_STATES, TASK_STATES } from './decisions.ts';
import { rowsOf } from './rows.ts';
import { inList } from './queries/task-filter.ts';

/** Only finished tasks lose their body: a task that may still be sent keeps the bytes it must send. */
const UNFINISHED = Object.values(TASK_STATES).filter((state) => !FINISHED_STATES.includes(state));

/**
 * How far a source's purge has come, so a round reads what expired since the last one instead of every
 * tombstone it already made. Every task of the source created before `from` has no body any more, or is in
 * `waiting`: tasks that were not finished when the purge passed them, looked up by ID each round. A body is
 * only ever removed, never set again, and a finished task whose body is gone cannot be sent again, so what
 * lies behind `from` stays done. Held in memory: after a start the first round reads the source whole.
 */
export interface PurgeProgress {
  /** A timestamptz as PostgreSQL prints it, microseconds kept; `-infinity` before the first round. */
  from: string;
  waiting: string[];
}

export const startOfPurge = (): PurgeProgress => ({ from: '-infinity', waiting: [] });

const cutoff = (retentionMs: number) => sql`now() - make_interval(secs => ${retentionMs / 1000})`;

/**
 * Drops the stored body of up to `batchSize` finished tasks of `source` older than its retention, created at
 * or after `from`, and returns how many. The dedup keys and the task rows (with the body's hash) stay as
 * tombstones, so a late redelivery is still recognised. SKIP LOCKED: a row someone is working on waits for
 * the next round instead of blocking.
 */
export async function purgeExpiredBodies(db: Db, source: string, retentionMs: number, batchSize: number, from = '-infinity'): Promise<number> {
  const purged = await rowsOf<{ id: string }>(
    db,
    sql`
    with expired as (
      select id from tasks
      where source = ${source}
        and body is not null
        and state in ${inList(FINISHED_STATES)}
        and created_at < ${cutoff(retentionMs)}
        and created_at >= ${from}::timestamptz
      order by created_at
      limit ${batchSize}
      for update skip locked
    )
    update tasks set body = null, updated_at = now()
    from expired where tasks.id = expired.id
    returning tasks.id`,
  );
  return purged.length;
}

/**
 * The tasks passed over unfinished in earlier rounds: purges those finished and expired since, and answers
 * how many it purged and which still hold a body.
 */
export async function purgeWaiting(db: Db, ids: string[], retentionMs: number): Promise<{ purged: number; waiting: string[] }> {
  if (ids.length === 0) return { purged: 0, waiting: [] };
  // One parameter however many: a paused destination can leave many tasks waiting.
  const listed = sql`(select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))`;
  // Lists travel as JSON text: the two drivers read a text[] differently.
  const [row] = await rowsOf<{ purged: number; waiting: string }>(
    db,
    sql`
    with due as (
      select id from tasks
      where id in ${listed} and body is not null and state in ${inList(FINISHED_STATES)} and created_at < ${cutoff(retentionMs)}
      for update skip locked
    ),
    purged as (
      update tasks set body = null, updated_at = now() from due where tasks.id = due.id returning tasks.id
    )
    select (select count(*)::int from purged) as purged,
      coalesce((select json_agg(id) from tasks
                where id in ${listed} and body is not null and id not in (select id from purged)), '[]')::text as waiting`,
  );
  return { purged: row!.purged, waiting: JSON.parse(row!.waiting) as string[] };
}

/**
 * Moves a source's `from` as far as it may go after a round: to the retention cutoff, but never past a
 * finished task still holding its body (a row the round skipped as locked) nor past the start of any
 * transaction still running here, which may yet commit a task created then; nor back, when retention grew
 * or such a transaction began before it. The unfinished tasks it passes join `waiting`. One statement: the
 * bound and what it passes are read from one snapshot.
 */
export async function advancePurge(db: Db, source: string, retentionMs: number, progress: PurgeProgress): Promise<PurgeProgress> {
  const [row] = await rowsOf<{ from: string; passed: string }>(
    db,
    sql`
    with bound as materialized (
      select least(${cutoff(retentionMs)},
        (select min(xact_start) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid())) as upto
    ),
    reached as materialized (
      select greatest(${progress.from}::timestamptz, least((select upto from bound), (
        select min(created_at) from tasks
        where source = ${source} and body is not null and state in ${inList(FINISHED_STATES)}
          and created_at < (select upto from bound) and created_at >= ${progress.from}::timestamptz))) as at
    )
    select (select at::text from reached) as "from",
      coalesce((select json_agg(id) from tasks
                where source = ${source} and body is not null and state in ${inList(UNFINISHED)}
                  and created_at < (select at from reached) and created_at >= ${progress.from}::timestamptz), '[]')::text as passed`,
  );
  return { from: row!.from, waiting: [...progress.waiting, ...(JSON.parse(row!.passed) as string[])] };
}
