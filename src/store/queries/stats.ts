import { sql, type SQL } from 'drizzle-orm';
import type { Db, Store } from '../connect.ts';
import { DECISIONS, TASK_STATES } from '../decisions.ts';
import { AWAITING_DESTINATION, NEEDS_ATTENTION } from '../operator-rules.ts';
import { rowsOf } from '../rows.ts';
import { attemptTally } from './attempt-tally.ts';
import { deliveryTally } from './delivery-tally.ts';
import { attentionSql, inList } from './task-filter.ts';
import { taskTally, type StateCount, type TaskTally } from './task-tally.ts';

/** Settled for good: nothing more will happen to these without a person's new decision. */
const SETTLED = [TASK_STATES.succeeded, TASK_STATES.cancelled, TASK_STATES.superseded];

export interface Stats {
  events: number;
  deliveries: number;
  /** Receipts by decision: `accepted` and each kind of duplicate. */
  decisions: Record<string, number>;
  /** Sends and lookups by outcome class (`open`: still in flight). */
  attempts: Record<string, number>;
  /** The sources' tasks by state; the alerts' own messages are not among them. */
  tasks: StateCount[];
  /** Tasks with a confirmed effect: by a 2xx, a lookup, or a person. */
  confirmedEffects: number;
  /** The alerts' messages (tasks of source `_alerts`) by state: sent to people, not effects of any source. */
  alertMessages: Record<string, number>;
  /** Every task not yet succeeded, cancelled or superseded, retries in flight included: nothing unfinished is left out. */
  unresolved: { count: number; oldestAgeSeconds: number | null };
  /** What waits for a person: the attention queue, held tasks and stranded steps included. */
  needsAttention: Summary;
  /** Tasks still to be sent that a paused destination holds, not waiting for a person otherwise. */
  heldByPausedDestinations: Summary;
  pausedDestinations: number;
}

/**
 * Tasks by state with the age of the oldest, over all tasks (one index-only pass over tasks_state_idx) or over
 * those `where` selects.
 */
export async function taskStates(db: Db, where?: SQL): Promise<StateCount[]> {
  const rows = await rowsOf<StateCount>(
    db,
    sql`select state, count(*)::int as count,
          extract(epoch from now() - min(created_at))::float8 as "oldestAgeSeconds"
        from tasks ${where ? sql`where ${where}` : sql``} group by state order by state`,
  );
  return rows;
}

export function summarize(states: StateCount[], among: (state: string) => boolean) {
  const picked = states.filter((s) => among(s.state));
  const ages = picked.map((s) => s.oldestAgeSeconds).filter((age): age is number => age !== null);
  return { count: picked.reduce((n, s) => n + s.count, 0), oldestAgeSeconds: ages.length > 0 ? Math.max(...ages) : null };
}

export const isUnresolved = (state: string) => !(SETTLED as readonly string[]).includes(state);

/**
 * The figures of `/api/stats` and the dashboard's stats page. Receipts, tasks and attempts are tallied by
 * increments, so a view costs what arrived since the last one, not the history.
 * One reader per process, its task tally shared with `/metrics`.
 */
export function statsReader(
  store: Store,
  tally: () => Promise<TaskTally> = taskTally(store),
  queue: () => Promise<QueueFigures> = () => queueFigures(store.db, []),
): () => Promise<Stats> {
  const { db } = store;
  const receipts = deliveryTally(store);
  const classes = attemptTally(store);
  return async () => {
    const [[paused], decisions, attempts, { tasks: states, alertMessages }, waiting] = await Promise.all([
      rowsOf<{ n: number }>(db, sql`select count(*)::int as n from destinations where paused_at is not null`),
      receipts(),
      classes(),
      tally(),
      queue(),
    ]);
    return {
      // A receipt claims a new event key exactly when it passes the delivery and event stages: it is then
      // accepted, or a duplicate task when its tasks already existed (see oncehook_record_deliveries).
      events: (decisions[DECISIONS.accepted] ?? 0) + (decisions[DECISIONS.duplicateTask] ?? 0),
      deliveries: Object.values(decisions).reduce((n, count) => n + count, 0),
      decisions,
      attempts,
      tasks: states,
      confirmedEffects: states.find((s) => s.state === TASK_STATES.succeeded)?.count ?? 0,
      alertMessages: Object.fromEntries(alertMessages.map((s) => [s.state, s.count])),
      unresolved: summarize(states, isUnresolved),
      needsAttention: waiting.needsAttention,
      heldByPausedDestinations: waiting.held,
      pausedDestinations: paused?.n ?? 0,
    };
  };
}

/** Held by a paused destination and not already waiting for a person on their own (an unknown outcome is). */
const HELD_ONLY = AWAITING_DESTINATION.filter((state) => !NEEDS_ATTENTION.includes(state as never));

/** The tasks still to be sent on `heldRoutes` (those of paused destinations) and counted nowhere else. */
export async function heldCount(db: Db, heldRoutes: readonly string[]): Promise<Summary> {
  const [row] = await rowsOf<Summary>(
    db,
    sql`select count(*)::int as count, extract(epoch from now() - min(created_at))::float8 as "oldestAgeSeconds"
        from tasks where state in ${inList(HELD_ONLY)} and source || '/' || action in ${inList(heldRoutes)}`,
  );
  return row ?? { count: 0, oldestAgeSeconds: null };
}

export interface Summary {
  count: number;
  oldestAgeSeconds: number | null;
}

/** Where no destination's pauses are looked up: nothing counts as held. */
export const noneHeld = async (): Promise<Summary> => ({ count: 0, oldestAgeSeconds: null });

/** The attention queue's length and its oldest task's age, and of them the tasks a paused destination holds. */
export interface QueueFigures {
  needsAttention: Summary;
  held: Summary;
}

/**
 * The attention queue's length and its oldest task's age, counted by the queue's own predicate (attentionSql) and
 * not from the tasks by state: a failed task whose replay made its effect is out of it, and a step stranded behind
 * a cancelled one is in it though only `pending`. Cheap enough for every dashboard page's badge.
 */
export async function attentionSummary(db: Db, heldRoutes: readonly string[]): Promise<Summary> {
  const [row] = await rowsOf<Summary>(
    db,
    sql`select count(*)::int as count, extract(epoch from now() - min(created_at))::float8 as "oldestAgeSeconds"
        from tasks where ${attentionSql(heldRoutes)}`,
  );
  return row ?? { count: 0, oldestAgeSeconds: null };
}

export async function queueFigures(db: Db, heldRoutes: readonly string[]): Promise<QueueFigures> {
  const [needsAttention, held] = await Promise.all([
    attentionSummary(db, heldRoutes),
    heldRoutes.length > 0 ? heldCount(db, heldRoutes) : noneHeld(),
  ]);
  return { needsAttention, held };
}
