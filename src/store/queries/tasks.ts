import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../connect.ts';
import { otherDatabasesXids, pageClauses, toPage, type Page, type PageRequest } from './cursor.ts';
import { rowsOf } from '../rows.ts';
import { taskFilterSql, type TaskFilter } from './task-filter.ts';

export interface TaskRow {
  id: string;
  source: string;
  action: string;
  eventId: string;
  topic: string | null;
  state: string;
  attempts: number;
  owner: string | null;
  lastError: string | null;
  resultReference: string | null;
  replayOf: string | null;
  /** Retention purged the stored bytes: the task can no longer be sent. */
  bodyPurged: boolean;
  createdAt: Date;
  updatedAt: Date;
}

/** Pages on task_refs, which a claim or finish never writes; `tasks` holds what a page shows. */
export function listTasksSql(filter: TaskFilter, request: PageRequest, others: readonly string[]): SQL {
  const page = pageClauses(request, sql`refs.txid`, sql`refs.task_id`, 'text', others);
  return sql`select tasks.id, tasks.source, action, tasks.event_id as "eventId", topic, state, attempts, owner,
      last_error as "lastError", result_reference as "resultReference", replay_of as "replayOf",
      body is null as "bodyPurged", created_at as "createdAt", updated_at as "updatedAt", refs.txid::text as "cursorTxid", refs.task_id as "cursorTiebreak"
    from task_refs refs join tasks on tasks.id = refs.task_id
    where ${page.where} and ${taskFilterSql(filter)}
    order by ${page.orderBy} limit ${page.limit}`;
}

export async function listTasks(db: Db, filter: TaskFilter, request: PageRequest): Promise<Page<TaskRow>> {
  const others = await otherDatabasesXids(db);
  const rows = await rowsOf<TaskRow & { cursorTxid: string; cursorTiebreak: string }>(db, listTasksSql(filter, request, others));
  return toPage(
    rows.map((row) => ({ ...row, createdAt: new Date(row.createdAt), updatedAt: new Date(row.updatedAt) })),
    request,
  );
}
