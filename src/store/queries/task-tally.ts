import { sql } from 'drizzle-orm';
import type { Store } from '../connect.ts';
import { ALERTS_SOURCE, MESSAGE_EVENT_IDS } from '../atomic/alerts.ts';
import { TASK_STATES } from '../decisions.ts';
import { rowsOf } from '../rows.ts';
import { SLICE } from '../slices.ts';
import { horizon } from './cursor.ts';
import { Increments, oneAtATime, type Ledger } from './increments.ts';
import { inList } from './task-filter.ts';

/** Every state but `succeeded`: counted row by row, since tasks leave them. */
const COUNTED = Object.values(TASK_STATES).filter((state) => state !== TASK_STATES.succeeded);

/**
 * Every task has one row here, with the inserting transaction's ID; tasks themselves keep theirs unindexed. Keyed by
 * whether the task is an alert's message, so that the sources' tasks and the alerts' messages are counted apart.
 */
const TASK_REFS: Ledger = {
  table: 'task_refs',
  key: `case when source = '${ALERTS_SOURCE}' then 'alerts' else 'tasks' end`,
  tiebreak: 'task_id',
  tiebreakType: 'text',
};

interface TallyRow {
  state: string | null;
  count: number | null;
  oldest: number | null;
  horizon: string;
  seen: number;
  settled: number;
  alertsSeen: number;
  alertsSettled: number;
  /** Each alert message not succeeded, as `[id, state]`. */
  messages: [string, string][];
}

export interface StateCount {
  state: string;
  count: number;
  /** Seconds since the oldest task in this state was created. */
  oldestAgeSeconds: number | null;
}

/** Tasks by state: the sources' tasks, and apart from them the alerts' own messages (source `_alerts`). */
export interface TaskTally {
  tasks: StateCount[];
  alertMessages: StateCount[];
}

/**
 * Tasks by state, read in time that follows the work rather than the history, for figures read every few
 * seconds (`/metrics`, `/api/stats`). Succeeded tasks pile up for ever; every other state holds what is in
 * flight or waits for a person (`cancelled` grows only by people's decisions). So those are counted exactly
 * over tasks_state_idx, and `succeeded` is what is left of all tasks.
 *
 * All tasks are counted by increments (increments.ts) over task_refs, which has a row with the inserting
 * transaction's ID for every task, and tasks are never deleted; the first read counts the history in slices
 * of `slice` tasks. After it, everything is one statement, so the total and the states come from one snapshot.
 *
 * An alert's message is a task too, but no source's: counted as tasks it would make 38 orders read as 47 confirmed
 * effects. The state index does not hold a task's source, and reading it from the table for every task in a state
 * tasks leave cost 22 → 311 ms with 100,000 pending among a million (PostgreSQL). So the tally keeps the IDs of the
 * messages not yet succeeded (a succeeded task never leaves that state), reads their states by key with the new
 * messages' in the same statement, and takes them out of the states' counts. The first read finds the messages
 * through task_refs' event index (their event IDs are their conditions); each later one, among the new rows.
 */
export function taskTally(store: Store, slice: number = SLICE[store.kind]): () => Promise<TaskTally> {
  const { db } = store;
  const all = new Increments();
  let unsettledMessages: string[] | null = null;
  return oneAtATime(async () => {
    await all.settle(db, TASK_REFS, slice);
    const newMessages =
      unsettledMessages === null
        ? sql`select task_id from task_refs where event_id in ${inList(MESSAGE_EVENT_IDS)} and source = ${ALERTS_SOURCE}`
        : sql`select task_id from task_refs where txid >= ${all.from}::xid8 and source = ${ALERTS_SOURCE}`;
    const rows = await rowsOf<TallyRow>(
      db,
      sql`with h as materialized (select ${horizon} as at),
          fresh as (
            select (count(*) filter (where source <> ${ALERTS_SOURCE}))::int as seen,
              (count(*) filter (where source <> ${ALERTS_SOURCE} and txid < (select at from h)))::int as settled,
              (count(*) filter (where source = ${ALERTS_SOURCE}))::int as "alertsSeen",
              (count(*) filter (where source = ${ALERTS_SOURCE} and txid < (select at from h)))::int as "alertsSettled"
            from task_refs where txid >= ${all.from}::xid8),
          messages as materialized (
            select t.id, t.state from tasks t
            where t.id in (select jsonb_array_elements_text(${JSON.stringify(unsettledMessages ?? [])}::jsonb) union ${newMessages})
              and t.state <> ${TASK_STATES.succeeded})
          select s.state, s.count, s.oldest, (select at::text from h) as horizon, fresh.*,
            (select coalesce(jsonb_agg(jsonb_build_array(m.id, m.state)), '[]'::jsonb) from messages m) as messages
          from fresh left join lateral (
            select state, count(*)::int as count,
              (select extract(epoch from now() - min(o.created_at))::float8 from tasks o
               where o.state = c.state and o.source <> ${ALERTS_SOURCE}) as oldest
            from tasks c where state in ${inList(COUNTED)} group by state
            union all
            select ${TASK_STATES.succeeded}, null, extract(epoch from now() - min(created_at))::float8
            from tasks where state = ${TASK_STATES.succeeded} and source <> ${ALERTS_SOURCE}
          ) s on true`,
    );
    const first = rows[0];
    if (!first) throw new Error('the task tally read no row');
    const totals = all.add(first.horizon, [
      { key: 'tasks', seen: first.seen, settled: first.settled },
      { key: 'alerts', seen: first.alertsSeen, settled: first.alertsSettled },
    ]);
    unsettledMessages = first.messages.map(([id]) => id);
    const messagesIn = new Map<string, number>();
    for (const [, state] of first.messages) messagesIn.set(state, (messagesIn.get(state) ?? 0) + 1);
    const sources = rows.map((row) => ({ ...row, count: row.count === null ? null : row.count - (messagesIn.get(row.state!) ?? 0) }));
    const messages = [...messagesIn].map(([state, count]) => ({ state, count, oldest: null }));
    return {
      tasks: byState(sources, totals.get('tasks') ?? 0),
      alertMessages: byState(messages, totals.get('alerts') ?? 0),
    };
  });
}

/** The states counted, and `succeeded` as what is left of `total`. */
function byState(rows: Pick<TallyRow, 'state' | 'count' | 'oldest'>[], total: number): StateCount[] {
  // A state that holds only alert messages is none of the sources'.
  const counted = rows.filter((row) => row.state !== TASK_STATES.succeeded && row.state !== null && (row.count ?? 0) > 0);
  const succeeded = total - counted.reduce((n, row) => n + (row.count ?? 0), 0);
  const states: StateCount[] = counted.map((row) => ({ state: row.state!, count: row.count ?? 0, oldestAgeSeconds: row.oldest }));
  if (succeeded > 0) {
    const oldest = rows.find((row) => row.state === TASK_STATES.succeeded)?.oldest ?? null;
    states.push({ state: TASK_STATES.succeeded, count: succeeded, oldestAgeSeconds: oldest });
  }
  return states.sort((a, b) => a.state.localeCompare(b.state));
}
