import { sql } from 'drizzle-orm';
import type { Db } from './connect.ts';
import { TASK_STATES } from './decisions.ts';
import { rowsOf } from './rows.ts';

/** Only finished tasks lose their body: a task that may still be sent keeps the bytes it must send. */
const FINISHED = [TASK_STATES.succeeded, TASK_STATES.failed, TASK_STATES.cancelled];

/**
 * Drops the stored body of up to `batchSize` finished tasks of `source` older than its retention, and returns
 * how many. The dedup keys and the task rows (with the body's hash) stay as tombstones, so a late redelivery
 * is still recognised. SKIP LOCKED: a row someone is working on waits for the next round instead of blocking.
 */
export async function purgeExpiredBodies(db: Db, source: string, retentionMs: number, batchSize: number): Promise<number> {
  const purged = await rowsOf<{ id: string }>(
    db,
    sql`
    with expired as (
      select id from tasks
      where source = ${source}
        and body is not null
        and state in (${sql.join(FINISHED.map((state) => sql`${state}`), sql`, `)})
        and created_at < now() - make_interval(secs => ${retentionMs / 1000})
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
