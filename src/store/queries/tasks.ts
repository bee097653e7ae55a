import { sql } from 'drizzle-orm';
import type { Db } from '../connect.ts';
import { pageClauses, toPage, type Page, type PageRequest } from './cursor.ts';
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
  createdAt: Date;
  updatedAt: Date;
}

export async function listTasks(db: Db, filter: TaskFilter, request: PageRequest): Promise<Page<TaskRow>> {
  const page = pageClauses(request, sql`tasks.txid`, sql`tasks.id`, 'text');
  const rows = await rowsOf<TaskRow & { cursorTxid: string; cursorTiebreak: string }>(
    db,
    sql`select id, source, action, event_id as "eventId", topic, state, attempts, owner, last_error as "lastError",
          result_reference as "resultReference", replay_of as "replayOf", created_at as "createdAt", updated_at as "updatedAt",
          txid::text as "cursorTxid", id as "cursorTiebreak"
        from tasks where ${page.where} and ${taskFilterSql(filter)}
        order by ${page.orderBy} limit ${page.limit}`,
  );
  return toPage(
    rows.map((row) => ({ ...row, createdAt: new Date(row.createdAt), updatedAt: new Date(row.updatedAt) })),
    request,
  );
}
