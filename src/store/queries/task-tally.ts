import { sql } from 'drizzle-orm';
import type { Store } from '../connect.ts';
import { TASK_STATES } from '../decisions.ts';
import { rowsOf } from '../rows.ts';
import { SLICE } from '../slices.ts';
import { horizon } from './cursor.ts';
import { Increments, oneAtATime, type Ledger } from './increments.ts';
import type { StateCount } from './stats.ts';
import { inList } from './task-filter.ts';

/** Every state but `succeeded`: counted row by row, since tasks leave them. */
const COUNTED = Object.values(TASK_STATES).filter((state) => state !== TASK_STATES.succeeded);

/** Every task has one row here, with the inserting transaction's ID; tasks themselves keep theirs unindexed. */
const TASK_REFS: Ledger = { table: 'task_refs', key: "''", tiebreak: 'task_id', tiebreakType: 'text' };

interface TallyRow {
  state: string | null;
  count: number | null;
  oldest: number | null;
  horizon: string;
  seen: number;
  settled: number;
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
 */
export function taskTally(store: Store, slice: number = SLICE[store.kind]): () => Promise<StateCount[]> {
  const { db } = store;
  const all = new Increments();
  return oneAtATime(async () => {
    await all.settle(db, TASK_REFS, slice);
    const rows = await rowsOf<TallyRow>(
      db,
      sql`with h as materialized (select ${horizon} as at),
          fresh as (
            select count(*)::int as seen, (count(*) filter (where txid < (select at from h)))::int as settled
            from task_refs where txid >= ${all.from}::xid8)
          select s.state, s.count, s.oldest, (select at::text from h) as horizon, fresh.seen, fresh.settled
          from fresh left join lateral (
            select state, count(*)::int as count, extract(epoch from now() - min(created_at))::float8 as oldest
            from tasks where state in ${inList(COUNTED)} group by state
            union all
            select ${TASK_STATES.succeeded}, null, extract(epoch from now() - min(created_at))::float8
            from tasks where state = ${TASK_STATES.succeeded}
          ) s on true`,
    );
    const first = rows[0];
    if (!first) throw new Error('the task tally read no row');
    const total = all.add(first.horizon, [{ key: '', seen: first.seen, settled: first.settled }]).get('') ?? 0;
    const counted = rows.filter((row) => row.state !== TASK_STATES.succeeded && row.state !== null);
    const succeeded = total - counted.reduce((n, row) => n + (row.count ?? 0), 0);
    const states: StateCount[] = counted.map((row) => ({ state: row.state!, count: row.count ?? 0, oldestAgeSeconds: row.oldest }));
    if (succeeded > 0) {
      const oldest = rows.find((row) => row.state === TASK_STATES.succeeded)?.oldest ?? null;
      states.push({ state: TASK_STATES.succeeded, count: succeeded, oldestAgeSeconds: oldest });
    }
    return states.sort((a, b) => a.state.localeCompare(b.state));
  });
}
