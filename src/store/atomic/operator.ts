/**
 * A person's decisions about one task: approve, resolve, retry, cancel, assign. A replay is replay.ts, the same
 * decisions over many tasks bulk.ts, a destination's resume resume.ts.
 *
 * Each is one statement: it locks the task, changes it only from a state listed in OPERATOR_RULES, records who
 * decided what and why in operator_actions, and wakes the forwarder — so a person and a worker acting at once
 * cannot both win, and a refusal names the state that refused it.
 */
import { eq, sql } from 'drizzle-orm';
import type { OrderPlace } from '../../shape/order.ts';
import type { RecordedDelivery } from '../../shape/reshape.ts';
import type { Db } from '../connect.ts';
import { TASK_STATES, TASKS_CHANNEL } from '../decisions.ts';
import { NEEDS_BODY, OPERATOR_RULES, type OperatorKind } from '../operator-rules.ts';
import { RECEIPT_HEADERS } from '../queries/receipt-headers.ts';
import { inList } from '../queries/task-filter.ts';
import { rowsOf } from '../rows.ts';
import { tasks } from '../schema.ts';

/** Who decided, and why. `actor` is the label of the admin token used. */
export interface Decider {
  actor: string;
  note: string;
}

export type OperatorOutcome<T extends object = object> =
  | ({ done: true } & T)
  /**
   * Refused: the task's state then (null: no such task), whether its body was purged, and for a replay, an
   * earlier replay of it that has not finished, or a latest replay other than the one the person saw.
   */
  | {
      done: false;
      state: string | null;
      bodyPurged: boolean;
      unsettledReplay?: string;
      unseenReplay?: ReplaySeen;
      /** The task failed at its transform: it has no bytes to send until the transform is computed again. */
      unshaped?: boolean;
      /** Why the transform, computed again for a retry, made no body either. */
      transformError?: string;
    };

/** A replay asked for from a view that saw `after` as the task's latest replay (null: none), where it is `latest`. */
export interface ReplaySeen {
  after: string | null;
  latest: string | null;
}

interface Guarded {
  taskId: string;
  kind: OperatorKind;
  /** The columns to set; `state` among them. */
  set: ReturnType<typeof sql>;
  detail: Record<string, unknown>;
}

async function guardedChange(db: Db, change: Guarded, who: Decider): Promise<OperatorOutcome> {
  // A send follows: the stored bytes must still be there, and be the ones to send (not a delivery's bytes kept
  // for a transform that failed on them).
  const needsBody = NEEDS_BODY.includes(change.kind);
  const [row] = await rowsOf<{ state: string | null; purged: boolean | null; unshaped: boolean | null; done: boolean }>(
    db,
    sql`
    with current as (
      select id, state, body is null as purged, transform_error is not null as unshaped from tasks where id = ${change.taskId} for update
    ),
    changed as (
      update tasks t set ${change.set}, updated_at = now()
      from current c
      where t.id = c.id and c.state in ${inList(OPERATOR_RULES[change.kind].from)}
        and (not ${needsBody} or not (c.purged or c.unshaped))
      returning t.id, c.state as was
    ),
    noted as (
      insert into operator_actions (task_id, kind, actor, note, detail)
      select id, ${change.kind}, ${who.actor}, ${who.note}, jsonb_build_object('from', was) || ${JSON.stringify(change.detail)}::jsonb
      from changed
      returning id
    )
    select (select state from current) as state, (select purged from current) as purged, (select unshaped from current) as unshaped,
      exists (select 1 from changed) as done,
      (select count(*) from changed, pg_notify(${TASKS_CHANNEL}, '')) as notified`,
  );
  if (row?.done) return { done: true };
  return { done: false, state: row?.state ?? null, bodyPurged: row?.purged ?? false, ...(row?.unshaped ? { unshaped: true } : {}) };
}

/** A person confirms the effect exists (done by hand, or found downstream): the task succeeds with their reference. */
export function resolveTask(db: Db, input: { taskId: string; reference: string } & Decider): Promise<OperatorOutcome> {
  return guardedChange(
    db,
    {
      taskId: input.taskId,
      kind: 'resolve',
      set: sql`state = ${TASK_STATES.succeeded}, result_reference = ${input.reference}, last_error = null,
        lease_owner = null, lease_expires_at = null`,
      detail: { reference: input.reference },
    },
    input,
  );
}

/**
 * A person decides a send cannot make a second effect, or accepts that it may: the task is due now. A
 * failed task whose attempts are spent gets one more; its lookups budget is left as it was.
 */
export function retryTask(db: Db, input: { taskId: string } & Decider): Promise<OperatorOutcome> {
  return guardedChange(
    db,
    {
      taskId: input.taskId,
      kind: 'retry',
      set: sql`state = ${TASK_STATES.pending}, next_attempt_at = now(), last_error = null`,
      detail: {},
    },
    input,
  );
}

/**
 * What a task's transform is computed from when it is computed again: the delivery's bytes (a failed transform's
 * task holds them as its body; a shaped task beside its body), and what the transform reads of the delivery.
 */
export interface ShapeSource extends RecordedDelivery {
  state: string;
  /** The task's own body's hash: what a change guards against having changed meanwhile. */
  bodySha256: string;
}

/**
 * The delivery a task's transform is computed again from: for a retry, of a task whose transform failed
 * (`unshaped`); for a replay, of a task whose body its transform made (`shaped`). Null when the task is neither,
 * or retention purged the bytes.
 */
export async function shapeSource(db: Db, taskId: string, which: 'unshaped' | 'shaped'): Promise<ShapeSource | null> {
  const bytes = which === 'unshaped' ? sql`t.body` : sql`t.source_body`;
  const [row] = await rowsOf<ShapeSource>(
    db,
    sql`select t.source, t.action, t.state, t.event_id as "eventId", t.topic, d.delivery_id as "deliveryId", ${RECEIPT_HEADERS} as headers,
          d.content_type as "contentType", ${bytes} as body, t.body_sha256 as "bodySha256"
        from tasks t join deliveries d on d.id = t.delivery_id
        where t.id = ${taskId} and ${bytes} is not null and t.body is not null
          and ${which === 'unshaped' ? sql`t.transform_error is not null` : sql`true`}`,
  );
  return row ?? null;
}

/**
 * A person's retry of a task whose transform failed, with what the transform makes of its delivery now (null: the
 * action has no transform now, and the delivery's bytes are sent as received). The task goes on as a new one would:
 * to a person's approval where its action asks for one, else due now. Only from the failed task read before
 * (`bodySha256`), so a retry racing another changes it once.
 */
export async function retryShaped(
  db: Db,
  input: {
    taskId: string;
    bodySha256: string;
    shaped: { body: Uint8Array; contentType: string; bodySha256: string } | null;
    urls: { requestUrl: string | null; lookupUrl: string | null };
    /** Its place in its key's order, for an action with `order`: a retry is placed as a new task would be. */
    order: OrderPlace | null;
    approval: boolean;
  } & Decider,
): Promise<OperatorOutcome> {
  const next = input.approval ? TASK_STATES.awaitingApproval : TASK_STATES.pending;
  const bytes = input.shaped
    ? sql`body = ${Buffer.from(input.shaped.body)}, content_type = ${input.shaped.contentType}, body_sha256 = ${input.shaped.bodySha256},`
    : sql``;
  const [row] = await rowsOf<{ done: boolean; state: string | null }>(
    db,
    sql`
    with current as (select id, state from tasks where id = ${input.taskId} for update),
    changed as (
      update tasks t set ${bytes} request_url = ${input.urls.requestUrl}, lookup_url = ${input.urls.lookupUrl},
        order_key = ${input.order?.key ?? null}, order_mode = ${input.order?.mode ?? null},
        order_number = ${input.order?.number ?? null}, order_text = ${input.order?.text ?? null}, order_by = ${input.order?.shown ?? null},
        transform_error = null, last_error = null, state = ${next}, next_attempt_at = now(), updated_at = now()
      from current c
      where t.id = c.id and c.state = ${TASK_STATES.failed} and t.transform_error is not null and t.body_sha256 = ${input.bodySha256}
      returning t.id, t.body_sha256, c.state as was
    ),
    noted as (
      insert into operator_actions (task_id, kind, actor, note, detail)
      select id, 'retry', ${input.actor}, ${input.note},
        jsonb_build_object('from', was, 'transformed', ${input.shaped !== null}::boolean, 'bodySha256', body_sha256)
      from changed
      returning id
    )
    select (select state from current) as state, exists (select 1 from changed) as done,
      (select count(*) from changed, pg_notify(${TASKS_CHANNEL}, '')) as notified`,
  );
  if (row?.done) return { done: true };
  return { done: false, state: row?.state ?? null, bodyPurged: false };
}

export function cancelTask(db: Db, input: { taskId: string } & Decider): Promise<OperatorOutcome> {
  return guardedChange(
    db,
    {
      taskId: input.taskId,
      kind: 'cancel',
      set: sql`state = ${TASK_STATES.cancelled}, lease_owner = null, lease_expires_at = null`,
      detail: {},
    },
    input,
  );
}

/** Names the person looking at a task (null: nobody). Recorded like every decision, so a hand-over is visible. */
export function assignTask(db: Db, input: { taskId: string; owner: string | null } & Decider): Promise<OperatorOutcome> {
  return guardedChange(
    db,
    { taskId: input.taskId, kind: 'assign', set: sql`owner = ${input.owner}`, detail: { owner: input.owner } },
    input,
  );
}

export type ApproveResult =
  | { approved: true }
  | { approved: false; state: string | null };

/**
 * A person lets an `awaiting_approval` task's first send go, with its stored bytes: the state change, the
 * note (with the hash of the bytes approved) and the forwarder's wake-up commit together.
 */
export async function approveTask(db: Db, input: { taskId: string; note: string; actor: string }): Promise<ApproveResult> {
  const approved = await rowsOf<{ id: string }>(
    db,
    sql`
    with approved as (
      update tasks set state = 'pending', next_attempt_at = now(), updated_at = now()
      where id = ${input.taskId} and state = 'awaiting_approval'
      returning id, body_sha256
    ),
    noted as (
      insert into operator_actions (task_id, kind, actor, note, detail)
      select id, 'approve', ${input.actor}, ${input.note},
        jsonb_build_object('from', ${TASK_STATES.awaitingApproval}::text, 'bodySha256', body_sha256) from approved
      returning id
    )
    select a.id, pg_notify(${TASKS_CHANNEL}, '') from approved a`,
  );
  if (approved.length > 0) return { approved: true };
  const [current] = await db.select({ state: tasks.state }).from(tasks).where(eq(tasks.id, input.taskId));
  return { approved: false, state: current?.state ?? null };
}
