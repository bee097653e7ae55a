/**
 * Bulk decisions: which tasks a filter's retry or replay changes, which it passes over and why (the counts its
 * dry run and its answer give), and the change itself.
 */
import { sql } from 'drizzle-orm';
import type { Db } from '../connect.ts';
import { TASK_STATES, TASKS_CHANNEL } from '../decisions.ts';
import { OPERATOR_RULES } from '../operator-rules.ts';
import { inList, taskFilterSql, type TaskFilter } from '../queries/task-filter.ts';
import { rowsOf } from '../rows.ts';
import type { Decider } from './operator.ts';
import { orderKeysLocked } from './order-locks.ts';
import { heldByRunningReplay, replayInto } from './replay.ts';

export const BULK_DECISIONS = ['retry', 'replay'] as const;
export type BulkDecision = (typeof BULK_DECISIONS)[number];

/** The tasks the filter selects in a state the decision is allowed from. */
const bulkAllowed = (kind: BulkDecision, filter: TaskFilter) =>
  sql`tasks where ${taskFilterSql(filter)} and tasks.state in ${inList(OPERATOR_RULES[kind].from)}`;

/**
 * A later try at the task's effect stands for it in bulk: a replay of it, or a newer replay of the task it replays.
 * An original and its failed replays are tries at one effect under different keys: retried or replayed together,
 * each may make it, and the later one is the later decision a person took about that effect. Each a hash of the
 * replays there are, once per statement.
 */
const replayed = sql`(exists (select 1 from tasks r where r.replay_of is not null and r.replay_of = tasks.id)
  or (tasks.replay_of is not null and exists (select 1 from tasks s where s.replay_of is not null and s.replay_of = tasks.replay_of
    and (s.created_at, s.id) > (tasks.created_at, tasks.id))))`;

/**
 * The tasks a bulk decision passes over because of a replay: those replayed (a replay stands for them, and one
 * that succeeded made the effect a retry would make again), and those whose replay tree holds a replay on its way
 * (another now would be one more effect). One by one, a replay is refused while one of its tree is on its way, and
 * a retry is allowed, warned of where a replay made the effect; in bulk nobody would see either.
 */
const byReplay = sql`(${replayed} or ${heldByRunningReplay})`;

/**
 * The tasks the filter selects in a state the decision is allowed from, with a body to send: not one whose
 * transform failed, which holds its delivery's bytes for the transform to be computed again (see `unshaped`).
 */
const sendable = (kind: BulkDecision, filter: TaskFilter) =>
  sql`${bulkAllowed(kind, filter)} and tasks.body is not null and tasks.transform_error is null`;

/** The tasks the filter selects, allowed from their state, that failed at their transform with their bytes kept. */
const unshaped = (kind: BulkDecision, filter: TaskFilter) =>
  sql`${bulkAllowed(kind, filter)} and tasks.body is not null and tasks.transform_error is not null`;

/**
 * The tasks whose transform failed that a bulk decision selects: a retry computes each one's transform again, one
 * task at a time (as a retry of one does); a replay passes over them, as it refuses one: nothing was ever sent.
 */
export async function unshapedTasks(db: Db, kind: BulkDecision, filter: TaskFilter): Promise<string[]> {
  const rows = await rowsOf<{ id: string }>(db, sql`select tasks.id from ${unshaped(kind, filter)} order by tasks.id`);
  return rows.map((row) => row.id);
}

/**
 * The tasks a bulk decision changes in one statement. A replay leaves out the tasks whose body their transform made:
 * each is shaped again for its replay, with the replay's own ID (see `shapedReplays`).
 */
const bulkTargets = (kind: BulkDecision, filter: TaskFilter) =>
  sql`${sendable(kind, filter)} and not (${byReplay})${kind === 'replay' ? sql` and tasks.source_body is null` : sql``}`;

/** The tasks a bulk replay replays one at a time, shaping each again (src/operate/retry.ts replayDecision). */
export async function shapedReplays(db: Db, filter: TaskFilter): Promise<string[]> {
  const rows = await rowsOf<{ id: string }>(
    db,
    sql`select tasks.id from ${sendable('replay', filter)} and not (${byReplay}) and tasks.source_body is not null order by tasks.id`,
  );
  return rows.map((row) => row.id);
}

/** A bulk decision's dry run: how many tasks it would change now, by the same predicate the write uses. */
export async function countBulk(db: Db, kind: BulkDecision, filter: TaskFilter): Promise<number> {
  const [row] = await rowsOf<{ n: number }>(db, sql`select count(*)::int as n from ${bulkTargets(kind, filter)}`);
  return row?.n ?? 0;
}

/**
 * The tasks a bulk decision passes over because retention purged their body, though their state allows it:
 * one by one they would each be refused 409 body_purged, so the answer says how many there were.
 */
export async function countBodyPurged(db: Db, kind: BulkDecision, filter: TaskFilter): Promise<number> {
  const [row] = await rowsOf<{ n: number }>(db, sql`select count(*)::int as n from ${bulkAllowed(kind, filter)} and tasks.body is null`);
  return row?.n ?? 0;
}

/** The tasks a bulk decision passes over because of a replay (see `byReplay`), though their state allows it. */
export async function countSkippedByReplay(db: Db, kind: BulkDecision, filter: TaskFilter): Promise<number> {
  const [row] = await rowsOf<{ n: number }>(db, sql`select count(*)::int as n from ${sendable(kind, filter)} and ${byReplay}`);
  return row?.n ?? 0;
}

/**
 * Retries or replays every task the filter selects, in one statement. A task a worker holds locked at that
 * instant is skipped (SKIP LOCKED) rather than waited for; the answer lists exactly the tasks changed.
 */
export async function bulkDecide(db: Db, kind: BulkDecision, filter: TaskFilter, who: Decider): Promise<string[]> {
  const targets = sql`targets as (select tasks.* from ${bulkTargets(kind, filter)} for update skip locked)`;
  const rows =
    kind === 'retry'
      ? await rowsOf<{ id: string }>(
          db,
          sql`
          with ${targets},
          -- A failed task retried goes back into its key's order: its key is locked first (order-locks.ts).
          keys as (select ${orderKeysLocked(sql`targets t`, sql`t.state = ${TASK_STATES.failed}`)} as locked),
          changed as (
            update tasks t set state = ${TASK_STATES.pending}, next_attempt_at = now(), last_error = null, updated_at = now()
            from targets where t.id = targets.id and (select locked from keys) >= 0
            returning t.id, targets.state as was
          ),
          noted as (
            insert into operator_actions (task_id, kind, actor, note, detail)
            select id, 'retry', ${who.actor}, ${who.note}, jsonb_build_object('from', was, 'bulk', true) from changed
            returning id
          )
          select id from changed, (select pg_notify(${TASKS_CHANNEL}, '')) n`,
        )
      : await bulkReplay(db, filter, who);
  return rows.map((row) => row.id);
}

/** replayTask's rule in bulk: lock the targets first, then replay those with no replay still on its way. */
function bulkReplay(db: Db, filter: TaskFilter, who: Decider): Promise<{ id: string }[]> {
  return db.transaction(async (tx) => {
    const locked = await rowsOf<{ id: string }>(tx, sql`select tasks.id from ${bulkTargets('replay', filter)} for update skip locked`);
    if (locked.length === 0) return [];
    return rowsOf<{ id: string }>(
      tx,
      sql`with targets as (
        select tasks.* from tasks
        where tasks.id in (select value from jsonb_array_elements_text(${JSON.stringify(locked.map((row) => row.id))}::jsonb))
          and not ${heldByRunningReplay}
      ), ${replayInto(sql`targets`, who, { bulk: true })}
      select id from created, (select pg_notify(${TASKS_CHANNEL}, '')) n`,
    );
  });
}
