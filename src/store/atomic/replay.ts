/**
 * A replay: a deliberate second effect of a task, under a new ID — and the replay trees that decide when another
 * one may be made. bulk.ts replays many tasks by the same rule.
 */
import { sql } from 'drizzle-orm';
import type { Db } from '../connect.ts';
import { FINISHED_STATES, TASK_STATES, TASKS_CHANNEL } from '../decisions.ts';
import { OPERATOR_RULES } from '../operator-rules.ts';
import { inList } from '../queries/task-filter.ts';
import { rowsOf } from '../rows.ts';
import type { Decider, OperatorOutcome } from './operator.ts';

/** A new task ID for a deliberate second effect: random, so the downstream sees a new Idempotency-Key. */
const newTaskId = sql`'t_' || replace(gen_random_uuid()::text, '-', '')`;

/**
 * Copies each target into a new pending task with a new ID and the same stored bytes and URLs, linked by
 * `replay_of`, and notes the decision on both tasks.
 */
export const replayInto = (targets: ReturnType<typeof sql>, who: Decider, detail: Record<string, unknown>) => sql`
    created as (
      insert into tasks (id, source, action, event_id, topic, delivery_id, state, body, content_type, body_sha256,
        after_task_id, replay_of, request_url, lookup_url)
      select ${newTaskId}, source, action, event_id, topic, delivery_id, ${TASK_STATES.pending}, body, content_type,
        body_sha256, after_task_id, id, request_url, lookup_url
      from ${targets}
      returning id, replay_of
    ),
    noted as (
      insert into operator_actions (task_id, kind, actor, note, detail)
      select side.task_id, 'replay', ${who.actor}, ${who.note}, side.detail || ${JSON.stringify(detail)}::jsonb
      from created c, lateral (values
        (c.replay_of, jsonb_build_object('replay', c.id, 'from', (select o.state from tasks o where o.id = c.replay_of))),
        (c.id, jsonb_build_object('replayOf', c.replay_of))) as side(task_id, detail)
      returning id
    )`;

/** A replay's own body, shaped again with its own ID, and the delivery's bytes it was shaped from (null: sent as they are). */
export interface ReplayContent {
  id: string;
  body: Uint8Array;
  contentType: string | null;
  bodySha256: string;
  sourceBody: Uint8Array | null;
}

/** replayInto for one task whose replay has a body of its own (see ReplayContent). */
const replayShaped = (taskId: string, content: ReplayContent, who: Decider) => sql`
    with created as (
      insert into tasks (id, source, action, event_id, topic, delivery_id, state, body, content_type, body_sha256,
        after_task_id, replay_of, source_body, request_url, lookup_url)
      select ${content.id}, source, action, event_id, topic, delivery_id, ${TASK_STATES.pending}, ${Buffer.from(content.body)},
        ${content.contentType}, ${content.bodySha256}, after_task_id, id,
        ${content.sourceBody === null ? null : Buffer.from(content.sourceBody)}::bytea, request_url, lookup_url
      from tasks where id = ${taskId}
      returning id, replay_of
    ),
    noted as (
      insert into operator_actions (task_id, kind, actor, note, detail)
      select side.task_id, 'replay', ${who.actor}, ${who.note}, side.detail
      from created c, lateral (values
        (c.replay_of, jsonb_build_object('replay', c.id, 'from', (select o.state from tasks o where o.id = c.replay_of))),
        (c.id, jsonb_build_object('replayOf', c.replay_of, 'shapedAgain', true))) as side(task_id, detail)
      returning id
    )
    select id as replay from created, (select pg_notify(${TASKS_CHANNEL}, '')) n`;

/** The newest replay first: the reverse of the order a task's view lists them in (task-view.ts), whose last is the latest. */
const LATEST_REPLAY_FIRST = sql`order by created_at desc, id desc`;

/**
 * Each task of a replay tree — an original, its replays, theirs — beside a replay of that tree still on its way
 * (`running`). Every replay in a tree is one more of its original's effect, so while one is on its way, another
 * replay or a retry anywhere in the tree could make a further one. Found from the running replays
 * (tasks_running_replays_idx, migration 0012: a few rows) up to their originals by key, then down each tree
 * through tasks_replay_idx, once per statement: the cost is that of the trees involved. Walked from every task
 * selected instead, a bulk decision over 200,000 failed tasks each with a failed replay took 2.5–3.7 s.
 */
const RUNNING_REPLAY_TREES = sql`with recursive
    up (id, replay_of, running) as (
      select id, replay_of, id from tasks where replay_of is not null and state not in ${inList(FINISHED_STATES)}
      union
      select t.id, t.replay_of, up.running from tasks t join up on t.id = up.replay_of
    ),
    down (id, root) as (
      select id, id from up where replay_of is null
      union
      select t.id, down.root from tasks t join down on t.replay_of = down.id
    )
  select down.id, up.running from down join up on up.id = down.root and up.replay_of is null`;

/** The task shares its replay tree with a replay on its way other than itself (see RUNNING_REPLAY_TREES). */
export const heldByRunningReplay = sql`tasks.id in (select trees.id from (${RUNNING_REPLAY_TREES}) trees where trees.running <> trees.id)`;

/**
 * A deliberate second effect: a new task with a new ID, linked to this one, sending the same stored bytes.
 * Refused while a replay anywhere in the task's replay tree (of the task, of its original, of any replay of
 * either) has not finished, so two people replaying at once make one.
 * With `after` — the latest replay the person saw (TaskView's replays, last), or null for none — it is also
 * refused when that is no longer the latest: a second click after the first replay finished, or someone else's
 * replay since, is not what the person decided on. The transaction first locks the tree's original, then the
 * task: every replay in one tree waits for the one before it, and the later statements, each with a snapshot of
 * its own, see any replay committed by whoever held the lock.
 */
export async function replayTask(
  db: Db,
  input: { taskId: string; after?: string | null | undefined; shaped?: ReplayContent } & Decider,
): Promise<OperatorOutcome<{ replay: string }>> {
  return db.transaction(async (tx) => {
    // The original, by key up the links: replay_of never changes, so the original found is the one to lock.
    await rowsOf(
      tx,
      sql`with recursive up (id, replay_of) as (
            select id, replay_of from tasks where id = ${input.taskId}
            union
            select t.id, t.replay_of from tasks t join up on t.id = up.replay_of
          )
          select id from tasks where id = (select id from up where replay_of is null) for update`,
    );
    const [current] = await rowsOf<{ state: string; purged: boolean; unshaped: boolean }>(
      tx,
      sql`select state, body is null as purged, transform_error is not null as unshaped from tasks where id = ${input.taskId} for update`,
    );
    if (!current) return { done: false, state: null, bodyPurged: false };
    const refusal = { done: false, state: current.state, bodyPurged: current.purged } as const;
    if (current.purged || !(OPERATOR_RULES.replay.from as readonly string[]).includes(current.state)) return refusal;
    // Never sent, and holding its delivery's bytes rather than a body to send: a retry is what it needs.
    if (current.unshaped) return { ...refusal, unshaped: true };
    if (input.after !== undefined) {
      const [latest] = await rowsOf<{ id: string }>(tx, sql`select id from tasks where replay_of = ${input.taskId} ${LATEST_REPLAY_FIRST} limit 1`);
      const seen = { after: input.after, latest: latest?.id ?? null };
      if (seen.latest !== seen.after) return { ...refusal, unseenReplay: seen };
    }
    const [unsettled] = await rowsOf<{ running: string }>(
      tx,
      sql`select trees.running from (${RUNNING_REPLAY_TREES}) trees where trees.id = ${input.taskId} order by trees.running limit 1`,
    );
    if (unsettled) return { ...refusal, unsettledReplay: unsettled.running };
    const [row] = await rowsOf<{ replay: string }>(
      tx,
      input.shaped === undefined
        ? sql`with eligible as (select * from tasks where id = ${input.taskId}), ${replayInto(sql`eligible`, input, {})}
          select id as replay from created, (select pg_notify(${TASKS_CHANNEL}, '')) n`
        : replayShaped(input.taskId, input.shaped, input),
    );
    return { done: true, replay: row!.replay };
  });
}
