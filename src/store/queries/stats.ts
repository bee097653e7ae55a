import { sql } from 'drizzle-orm';
import type { Db } from '../connect.ts';
import { TASK_STATES } from '../decisions.ts';
import { NEEDS_ATTENTION } from '../operator-rules.ts';
import { rowsOf } from '../rows.ts';
import { inList } from './task-filter.ts';

/** Settled for good: nothing more will happen to these without a person's new decision. */
const SETTLED = [TASK_STATES.succeeded, TASK_STATES.cancelled];

export interface StateCount {
  state: string;
  count: number;
  /** Seconds since the oldest task in this state was created. */
  oldestAgeSeconds: number | null;
}

export interface Stats {
  events: number;
  deliveries: number;
  /** Receipts by decision: `accepted` and each kind of duplicate. */
  decisions: Record<string, number>;
  /** Sends and lookups by outcome class (`open`: still in flight). */
  attempts: Record<string, number>;
  tasks: StateCount[];
  /** Tasks with a confirmed effect: by a 2xx, a lookup, or a person. */
  confirmedEffects: number;
  /** Every task not yet succeeded or cancelled, retries in flight included: nothing unfinished is left out. */
  unresolved: { count: number; oldestAgeSeconds: number | null };
  /** The part of it that waits for a person. */
  needsAttention: { count: number; oldestAgeSeconds: number | null };
  pausedDestinations: number;
}

/**
 * Tasks by state with the age of the oldest: one index-only pass over tasks_state_idx, over the states
 * named (a range of the index each) or over all tasks.
 */
export async function taskStates(db: Db, among?: readonly string[]): Promise<StateCount[]> {
  const rows = await rowsOf<StateCount>(
    db,
    sql`select state, count(*)::int as count,
          extract(epoch from now() - min(created_at))::float8 as "oldestAgeSeconds"
        from tasks ${among ? sql`where state in ${inList(among)}` : sql``} group by state order by state`,
  );
  return rows;
}

export function summarize(states: StateCount[], among: (state: string) => boolean) {
  const picked = states.filter((s) => among(s.state));
  const ages = picked.map((s) => s.oldestAgeSeconds).filter((age): age is number => age !== null);
  return { count: picked.reduce((n, s) => n + s.count, 0), oldestAgeSeconds: ages.length > 0 ? Math.max(...ages) : null };
}

export const isUnresolved = (state: string) => !(SETTLED as readonly string[]).includes(state);
export const needsAttention = (state: string) => NEEDS_ATTENTION.includes(state as never);

export async function stats(db: Db): Promise<Stats> {
  const [[totals], decisions, attempts, tasks] = await Promise.all([
    rowsOf<{ events: number; deliveries: number; paused: number }>(
      db,
      sql`select (select count(*)::int from event_keys) as events, (select count(*)::int from deliveries) as deliveries,
            (select count(*)::int from destinations where paused_at is not null) as paused`,
    ),
    rowsOf<{ key: string; n: number }>(db, sql`select decision as key, count(*)::int as n from deliveries group by decision`),
    rowsOf<{ key: string; n: number }>(db, sql`select coalesce(class, 'open') as key, count(*)::int as n from attempts group by 1`),
    taskStates(db),
  ]);
  const tally = (rows: { key: string; n: number }[]) => Object.fromEntries(rows.map((row) => [row.key, row.n]));
  return {
    events: totals?.events ?? 0,
    deliveries: totals?.deliveries ?? 0,
    decisions: tally(decisions),
    attempts: tally(attempts),
    tasks,
    confirmedEffects: tasks.find((s) => s.state === TASK_STATES.succeeded)?.count ?? 0,
    unresolved: summarize(tasks, isUnresolved),
    needsAttention: summarize(tasks, needsAttention),
    pausedDestinations: totals?.paused ?? 0,
  };
}

/** Counts of tasks waiting for a person, for the navigation badge: cheap enough for every page. */
export async function attentionCount(db: Db): Promise<number> {
  const [row] = await rowsOf<{ n: number }>(db, sql`select count(*)::int as n from tasks where state in ${inList(NEEDS_ATTENTION)}`);
  return row?.n ?? 0;
}
