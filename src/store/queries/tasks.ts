import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../connect.ts';
import { otherDatabasesXids, pageClauses, toPage, type Page, type PageRequest } from './cursor.ts';
import { rowsOf } from '../rows.ts';
import { strandedSql } from './replay-chain.ts';
import { taskFilterSql, type TaskFilter } from './task-filter.ts';

export interface TaskRow {
  id: string;
  source: string;
  action: string;
  eventId: string;
  topic: string | null;
  state: string;
  attempts: number;
  lookups: number;
  firstAttemptAt: Date | null;
  owner: string | null;
  lastError: string | null;
  resultReference: string | null;
  replayOf: string | null;
  /** Retention purged the stored bytes: the task can no longer be sent. */
  bodyPurged: boolean;
  /** A step's predecessor that will not succeed on its own (strandedSql), with its state; null for any other task. */
  strandedBy: { id: string; state: string } | null;
  createdAt: Date;
  updatedAt: Date;
}

/**
 * Pages on task_refs, which a claim or finish never writes; `tasks` holds what a page shows. The attention queue
 * pages on the task's own copy of its txid instead: the queue is a sliver of all tasks, most of it often the newest,
 * and judged common enough to be met soon it was found by walking every task in page order (a page oldest first
 * took 1.8 s at 500,000 tasks). Behind a fence (`offset 0`) its rows are read through the states' indexes and then
 * sorted, without a join the planner would make by hashing every task's refs: a page costs what the queue holds.
 */
export function listTasksSql(filter: TaskFilter, request: PageRequest, others: readonly string[]): SQL {
  const queue = filter.attention !== undefined;
  const key = queue ? { txid: sql`tasks.txid`, id: sql`tasks.id` } : { txid: sql`refs.txid`, id: sql`refs.task_id` };
  const page = pageClauses(request, key.txid, key.id, 'text', others);
  const from = queue
    ? sql`(select * from tasks where ${taskFilterSql(filter)} offset 0) tasks`
    : sql`task_refs refs join tasks on tasks.id = refs.task_id`;
  return sql`select tasks.id, tasks.source, action, tasks.event_id as "eventId", topic, state, attempts, lookups,
      first_attempt_at as "firstAttemptAt", owner,
      last_error as "lastError", result_reference as "resultReference", replay_of as "replayOf",
      body is null as "bodyPurged",
      case when ${strandedSql(sql`tasks`)} then (select predecessor.id || ' ' || predecessor.state from tasks predecessor where predecessor.id = tasks.after_task_id) end as "strandedBy",
      created_at as "createdAt", updated_at as "updatedAt", ${key.txid}::text as "cursorTxid", ${key.id} as "cursorTiebreak"
    from ${from}
    where ${page.where}${queue ? sql`` : sql` and ${taskFilterSql(filter)}`}
    order by ${page.orderBy} limit ${page.limit}`;
}

export async function listTasks(db: Db, filter: TaskFilter, request: PageRequest): Promise<Page<TaskRow>> {
  const others = await otherDatabasesXids(db);
  type Row = Omit<TaskRow, 'strandedBy'> & { strandedBy: string | null; cursorTxid: string; cursorTiebreak: string };
  const rows = await rowsOf<Row>(db, listTasksSql(filter, request, others));
  return toPage(
    rows.map((row) => ({
      ...row,
      strandedBy: predecessor(row.strandedBy),
      firstAttemptAt: row.firstAttemptAt === null ? null : new Date(row.firstAttemptAt),
      createdAt: new Date(row.createdAt),
      updatedAt: new Date(row.updatedAt),
    })),
    request,
  );
}

/** `id state`, as the list reads a stranded step's predecessor: task IDs and states hold no space. */
function predecessor(read: string | null): TaskRow['strandedBy'] {
  if (read === null) return null;
  const [id, state] = read.split(' ') as [string, string];
  return { id, state };
}
