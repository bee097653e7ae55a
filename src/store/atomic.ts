/**
 * The statements that decide atomicity. Every "is this new?" question is answered by a write — an
 * `INSERT … ON CONFLICT DO NOTHING RETURNING` on a primary key — never by a read before a write, so two
 * requests or two instances racing on the same key cannot both see "new". Routes and workers call these
 * functions; they never compose SQL themselves.
 */
import { eq, sql, type SQL } from 'drizzle-orm';
import type { Db } from './connect.ts';
import { DECISIONS, FINISHED_STATES, TASK_STATES, TASKS_CHANNEL, type Decision, type TaskState } from './decisions.ts';
import { NEEDS_BODY, OPERATOR_RULES, type OperatorKind } from './operator-rules.ts';
import { inList, taskFilterSql, type TaskFilter } from './queries/task-filter.ts';
import { PREPARED } from './prepared.ts';
import { batchJson, rowsOf } from './rows.ts';
import { tasks } from './schema.ts';

export interface NewTask {
  id: string;
  action: string;
  state: TaskState;
  afterTaskId: string | null;
}

export interface ReceiptInput {
  id: string;
  source: string;
  deliveryId: string;
  eventId: string;
  topic: string | null;
  occurredAt: Date | null;
  headers: Record<string, string>;
  contentType: string | null;
  body: Uint8Array;
  bodySha256: string;
  /** The tasks this receipt names, sorted by ID so concurrent writers take row locks in one order. */
  tasks: NewTask[];
}

export interface TaskSummary {
  id: string;
  action: string;
  state: string;
}

export interface FirstSeen {
  /** The earlier receipt this one matched. */
  id: string;
  deliveryId: string;
  eventId: string;
  receivedAt: Date;
  decision: string;
}

/**
 * The outcome of recording one receipt, with the record it matched, from the same transaction. `receipt` is the
 * ID it was stored under: a batch written again after a lost connection is stored under new IDs.
 */
export type Recorded =
  | { receipt: string; decision: typeof DECISIONS.accepted; receivedAt: Date; created: TaskSummary[]; existing: TaskSummary[] }
  | {
      receipt: string;
      decision: Exclude<Decision, typeof DECISIONS.accepted>;
      receivedAt: Date;
      firstSeen: FirstSeen;
      existing: TaskSummary[];
    };

interface RecordedRow {
  decision: Decision;
  receivedMs: number;
  first: { id: string; deliveryId: string; eventId: string; receivedMs: number; decision: string } | null;
  created: TaskSummary[];
  existing: TaskSummary[];
}

/**
 * Records a batch of verified receipts in one transaction — one durable commit for all of them (group
 * commit) — with exactly the decisions each would get alone, in arrival order: a repeat inside the batch is
 * a duplicate of the earlier receipt, as it would be of a committed one. The delivery key, the event key,
 * the tasks, the receipts and the forwarder's wake-up commit together or not at all.
 *
 * The stages run in the database function `oncehook_record_deliveries` (migration 0001, redefined in 0004):
 * one round trip per batch instead of one per stage. Measured, the stages' round trips were the gateway's
 * largest cost — each a socket write and a parse — and a batch's latency was their sum.
 */
export async function recordDeliveries(db: Db, inputs: readonly ReceiptInput[]): Promise<Recorded[]> {
  if (inputs.length === 0) return [];
  // Only the first receipt of a delivery key in a batch can create tasks (the function's first stage lets no
  // later one pass), so a later one's body is never read and is not sent: in a storm of one delivery that is
  // nearly the whole batch.
  const keys = new Set<string>();
  const batch = inputs.map((input, i) => {
    const key = `${input.source}\n${input.deliveryId}`;
    const bodyRead = !keys.has(key);
    keys.add(key);
    return {
      i,
      id: input.id,
      source: input.source,
      delivery_id: input.deliveryId,
      event_id: input.eventId,
      topic: input.topic,
      occurred_at: input.occurredAt,
      headers: input.headers,
      content_type: input.contentType,
      body: bodyRead ? Buffer.from(input.body.buffer, input.body.byteOffset, input.body.byteLength).toString('base64') : null,
      body_sha256: input.bodySha256,
      body_bytes: input.body.byteLength,
      tasks: input.tasks.map((task) => ({ id: task.id, action: task.action, state: task.state, after_task_id: task.afterTaskId })),
    };
  });
  const [row] = await rowsOf<{ recorded: RecordedRow[] }>(
    db,
    sql`${PREPARED}select oncehook_record_deliveries(${batchJson(batch)}::json, ${TASKS_CHANNEL}) as recorded`,
  );
  return row!.recorded.map((r, i): Recorded => {
    const receipt = inputs[i]!.id;
    const receivedAt = new Date(Math.floor(r.receivedMs));
    if (r.decision === DECISIONS.accepted) return { receipt, decision: r.decision, receivedAt, created: r.created, existing: r.existing };
    const { receivedMs, ...first } = r.first!;
    return {
      receipt,
      decision: r.decision,
      receivedAt,
      firstSeen: { ...first, receivedAt: new Date(Math.floor(receivedMs)) },
      existing: r.existing,
    };
  });
}

// ─── Forwarding ──────────────────────────────────────────────────────────────────────────────────────────
// The forwarder's statements. Each state change is one statement guarded by the state it expects (and, for
// a worker, by its lease), so two workers, a reaper and a person acting at once cannot both win. Every time
// is the database's now(): workers on several hosts never compare their own clocks.

/** How the claim sees one configured action. Config is the routing table, so it is passed in, not stored. */
export interface ClaimRoute {
  source: string;
  action: string;
  /** The downstream origin: cooldowns and pauses apply to it. */
  destination: string;
  keyed: boolean;
  keyRetentionMs: number;
  lookup: boolean;
  maxAttempts: number;
  leaseMs: number;
}

/** What a claimed task is for: a send, a lookup about an unknown outcome, or nothing left but review. */
export const CLAIM_MODES = { send: 'send', lookup: 'lookup', review: 'review' } as const;
export type ClaimMode = (typeof CLAIM_MODES)[keyof typeof CLAIM_MODES];

export interface ClaimedTask {
  id: string;
  source: string;
  action: string;
  eventId: string;
  topic: string | null;
  body: Uint8Array;
  contentType: string | null;
  /** Sends so far, this one included when the mode is `send`. */
  attempts: number;
  /** Lookups so far, this one included when the mode is `lookup`. */
  lookups: number;
  mode: ClaimMode;
  /** The ledger row opened by the claim; null for `review`, which sends nothing. */
  attemptId: number | null;
  /** Why a `review` claim holds the task for a person. */
  reason: string | null;
  /** `pending` or `outcome_unknown`: where an unsent claim goes back to. */
  priorState: TaskState;
}

/**
 * Claims up to `limit` due tasks in one call — graphile-worker's shape: lock with SKIP LOCKED, update, open a
 * ledger row — so a crash after the claim still leaves the attempt on record. An unknown outcome is
 * reconciled by the rules of CONTRACT.md, decided there in database time: send again under the same key
 * while the downstream still keeps it, else ask the lookup, else hold it for a person. The statement and the
 * planner settings it needs live in the database function `oncehook_claim_tasks` (migrations 0006, 0008): one
 * round trip per claim instead of a transaction's four.
 */
export async function claimTasks(
  db: Db,
  input: { owner: string; routes: readonly ClaimRoute[]; limit: number },
): Promise<Claim> {
  if (input.limit <= 0 || input.routes.length === 0) return { tasks: [], at: null };
  // The claim's own time comes back even when nothing was due: the look at the next due time compares in
  // database time, whatever time passed in this process or on the way to the server.
  const rows = await rowsOf<ClaimedTask & { claimedAt: string }>(
    db,
    sql`${PREPARED}select now() as "claimedAt", c.* from (select) as look
        left join lateral oncehook_claim_tasks(${input.owner}, ${JSON.stringify(input.routes)}::jsonb, ${input.limit}::int) as c on true`,
  );
  const tasks: ClaimedTask[] = [];
  for (const { claimedAt: _, ...task } of rows) if (task.id !== null) tasks.push(task);
  return { tasks, at: rows[0]!.claimedAt };
}

export interface Claim {
  tasks: ClaimedTask[];
  /** When the claim looked, as the database writes the time (to the microsecond); null when it did not ask. */
  at: string | null;
}

/**
 * Milliseconds until the next task may be due (0 when one already is), or null when nothing waits.
 * `claimedAt`: when the last claim looked, in database time (null: just now).
 */
export async function nextDueInMs(db: Db, claimedAt: string | null): Promise<number | null> {
  // Only times after the last claim: a task due before it and not claimed is either locked by another worker
  // or blocked (a paused destination, a step waiting for its sibling), and a notification or the poll brings
  // it back; one that fell due since (a short backoff) is due now. The claim's time is the database's own:
  // measured in this process instead, a statement that started late on a busy machine put the line after a
  // retry that fell due in between, and the retry waited for the poll. No `greatest(0, …)` in the statement:
  // it skips nulls, so "nothing waits" came back as 0, and an idle forwarder looked again every 10 ms instead
  // of every poll (measured: 160 statements a second on an idle gateway).
  const [row] = await rowsOf<{ ms: number | null }>(
    db,
    sql`${PREPARED}select (extract(epoch from least(
        (select min(next_attempt_at) from tasks where state in ('pending', 'outcome_unknown')
           and next_attempt_at > coalesce(${claimedAt}::timestamptz, now())),
        (select min(cooldown_until) from destinations where cooldown_until > now()),
        (select min(lease_expires_at) from tasks where state = 'in_progress')
      ) - now()) * 1000)::float8 as ms`,
  );
  const ms = row?.ms ?? null;
  return ms === null ? null : Math.max(0, ms);
}

/** Pushes a held lease forward; false when it is no longer this worker's (it expired and was reclaimed). */
export async function renewLease(db: Db, input: { taskId: string; owner: string; leaseMs: number }): Promise<boolean> {
  const renewed = await rowsOf<{ id: string }>(
    db,
    sql`${PREPARED}update tasks set lease_expires_at = now() + ${input.leaseMs} * interval '1 millisecond'
        where id = ${input.taskId} and lease_owner = ${input.owner} and state = 'in_progress'
        returning id`,
  );
  return renewed.length > 0;
}

export interface ReclaimedTask {
  id: string;
  source: string;
  action: string;
}

/**
 * A lease that expired belongs to a worker that stopped mid-attempt: its request may have reached the
 * downstream, so the task becomes an unknown outcome (reconciled by the claim's rules, never blindly
 * resent) and the open ledger row is closed as such.
 */
export async function reclaimExpiredLeases(db: Db): Promise<ReclaimedTask[]> {
  return rowsOf<ReclaimedTask>(
    db,
    sql`${PREPARED}
    with expired as (
      select id from tasks where state = 'in_progress' and lease_expires_at < now()
      for update skip locked
    ),
    reclaimed as (
      update tasks t set state = 'outcome_unknown', lease_owner = null, lease_expires_at = null,
        next_attempt_at = now(), updated_at = now(),
        last_error = 'the worker holding the lease stopped before finishing the attempt'
      from expired where t.id = expired.id
      returning t.id, t.source, t.action
    ),
    ledger as (
      update attempts a set finished_at = now(), class = 'lease_expired', decision = 'outcome_unknown',
        error = 'the worker stopped mid-attempt; the request may have reached the downstream'
      from reclaimed where a.task_id = reclaimed.id and a.finished_at is null
      returning a.id
    )
    select id, source, action from reclaimed`,
  );
}

/** A destination's standing changed by an answer: cooled down (429, 503) or paused (401, 403). */
export type DestinationChange = { origin: string; pause: string | null };

export interface AttemptFinish {
  taskId: string;
  attemptId: number;
  owner: string;
  /** What the ledger keeps about this attempt. */
  status: number | null;
  durationMs: number;
  class: string;
  error: string | null;
  reference: string | null;
  requestSha256: string | null;
  decision: string;
  /** Where the task goes next, and not before max(now() + delayMs, notBefore). */
  state: TaskState;
  delayMs: number;
  notBefore: Date | null;
  /** A cooldown lasts as long as the task's own wait; a pause until a person resumes. */
  destination: DestinationChange | null;
}

/**
 * Closes attempts, many in one statement: each ledger row, each task (only while its worker still holds the
 * lease — a reclaimed task has moved on, and the ledger says this result was superseded) and the destinations
 * they cooled down or paused. Returns, in order, whether each task took its decision. Finishing in batches
 * shares one durable commit among many attempts, as ingest's group commit does for deliveries.
 */
export async function finishAttempts(db: Db, finishes: readonly AttemptFinish[]): Promise<boolean[]> {
  if (finishes.length === 0) return [];
  const rows = finishes.map((f, i) => ({
    i,
    taskId: f.taskId,
    attemptId: f.attemptId,
    owner: f.owner,
    status: f.status,
    durationMs: Math.round(f.durationMs),
    class: f.class,
    error: f.error,
    reference: f.reference,
    requestSha256: f.requestSha256,
    decision: f.decision,
    state: f.state,
    delayMs: f.delayMs,
    notBefore: f.notBefore?.toISOString() ?? null,
    origin: f.destination?.origin ?? null,
    pause: f.destination?.pause ?? null,
  }));
  const kept = await rowsOf<{ kept: boolean }>(
    db,
    sql`${PREPARED}
    with f as (
      select f.*, greatest(now() + f."delayMs" * interval '1 millisecond', coalesce(f."notBefore", now())) as next
      from json_to_recordset(${batchJson(rows)}::json) as f(i int, "taskId" text, "attemptId" bigint, owner text,
        status int, "durationMs" int, class text, error text, reference text, "requestSha256" text, decision text,
        state text, "delayMs" bigint, "notBefore" timestamptz, origin text, pause text)
    ),
    task as (
      update tasks t set state = f.state, next_attempt_at = f.next, lease_owner = null, lease_expires_at = null,
        last_error = case when f.state = ${TASK_STATES.succeeded} then null else f.error end,
        result_reference = coalesce(f.reference, t.result_reference), updated_at = now()
      from f
      where t.id = f."taskId" and t.lease_owner = f.owner and t.state = 'in_progress'
        -- The owner names a process, not a claim: after a stall past its lease, the same process may have
        -- reclaimed the task and claimed it again. Only the attempt still open (a reclaim closes it) decides.
        and exists (select 1 from attempts a where a.id = f."attemptId" and a.task_id = t.id and a.finished_at is null)
      returning t.id
    ),
    -- PostgreSQL runs every data-modifying CTE to completion, read or not.
    ledger as (
      update attempts a set finished_at = now(), response_status = f.status, duration_ms = f."durationMs",
        class = f.class, error = f.error, reference = f.reference, request_sha256 = f."requestSha256",
        decision = case when f."taskId" in (select id from task) then f.decision
                        else 'superseded: the lease had expired and the task was reclaimed' end
      from f
      -- Once per attempt: a batch committed whose answer was lost is sent again, and must not rewrite a closed
      -- row as superseded. A reclaimed one is the exception: its late result is what actually came back.
      where a.id = f."attemptId" and (a.finished_at is null or a.class = 'lease_expired')
      returning a.id
    ),
    -- One row per origin: an upsert may not touch the same row twice in one statement.
    destination as (
      insert into destinations (origin, cooldown_until, paused_at, paused_reason, updated_at)
      select f.origin, max(f.next) filter (where f.pause is null),
        case when bool_or(f.pause is not null) then now() end, min(f.pause), now()
      from f where f.origin is not null
      group by f.origin
      on conflict (origin) do update set
        cooldown_until = greatest(destinations.cooldown_until, excluded.cooldown_until),
        paused_at = coalesce(destinations.paused_at, excluded.paused_at),
        paused_reason = coalesce(destinations.paused_reason, excluded.paused_reason),
        updated_at = now()
      returning origin
    )
    select f."taskId" in (select id from task) as kept from f order by f.i`,
  );
  return kept.map((row) => row.kept);
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

// ─── Shutdown ────────────────────────────────────────────────────────────────────────────────────────────
// A stopping worker hands back only what it never sent. An attempt whose request was written ends through
// finishAttempts as an unknown outcome, like any other: stopping must never make a sent request look unsent.

/**
 * Gives back a claim whose request was never written: the task is due again at once, in the state it was
 * claimed from — `pending`, or `outcome_unknown` for a keyed resend or a lookup, so the next claim checks
 * again whether the downstream still keeps the key — and the claim's count is taken back, so a shutdown costs
 * no attempt. The ledger keeps the row, closed as released. Only while this worker still holds the lease;
 * returns whether it did.
 */
export async function releaseUnsent(
  db: Db,
  input: { taskId: string; attemptId: number; owner: string; mode: ClaimMode; priorState: TaskState },
): Promise<boolean> {
  const send = input.mode === CLAIM_MODES.send;
  const [row] = await rowsOf<{ released: boolean }>(
    db,
    sql`
    with task as (
      update tasks set state = ${input.priorState},
        attempts = attempts - ${send ? 1 : 0}, lookups = lookups - ${send ? 0 : 1},
        first_attempt_at = case when ${send} and attempts = 1 then null else first_attempt_at end,
        next_attempt_at = now(), lease_owner = null, lease_expires_at = null, updated_at = now()
      where id = ${input.taskId} and lease_owner = ${input.owner} and state = 'in_progress'
        -- This claim's, not a later one by the same process (see finishAttempts).
        and exists (select 1 from attempts a where a.id = ${input.attemptId} and a.task_id = tasks.id and a.finished_at is null)
      returning id
    ),
    ledger as (
      update attempts set finished_at = now(), class = 'released', decision = 'released unsent: the worker stopped before writing the request'
      where id = ${input.attemptId} and exists (select 1 from task)
      returning id
    )
    -- Another worker may be idle: it should take the task now, not at its next poll.
    select exists (select 1 from task) as released, (select pg_notify(${TASKS_CHANNEL}, '') from task)`,
  );
  return row?.released ?? false;
}

// ─── Operator actions ────────────────────────────────────────────────────────────────────────────────────
// A person's decisions. Each is one statement: it locks the task, changes it only from a state listed in
// OPERATOR_RULES, records who decided what and why in operator_actions, and wakes the forwarder — so a
// person and a worker acting at once cannot both win, and a refusal names the state that refused it.

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
  | { done: false; state: string | null; bodyPurged: boolean; unsettledReplay?: string; unseenReplay?: ReplaySeen };

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
  // A send follows: the stored bytes must still be there.
  const needsBody = NEEDS_BODY.includes(change.kind);
  const [row] = await rowsOf<{ state: string | null; purged: boolean | null; done: boolean }>(
    db,
    sql`
    with current as (
      select id, state, body is null as purged from tasks where id = ${change.taskId} for update
    ),
    changed as (
      update tasks t set ${change.set}, updated_at = now()
      from current c
      where t.id = c.id and c.state in ${inList(OPERATOR_RULES[change.kind].from)}
        and (not ${needsBody} or not c.purged)
      returning t.id, c.state as was
    ),
    noted as (
      insert into operator_actions (task_id, kind, actor, note, detail)
      select id, ${change.kind}, ${who.actor}, ${who.note}, jsonb_build_object('from', was) || ${JSON.stringify(change.detail)}::jsonb
      from changed
      returning id
    )
    select (select state from current) as state, (select purged from current) as purged,
      exists (select 1 from changed) as done,
      (select count(*) from changed, pg_notify(${TASKS_CHANNEL}, '')) as notified`,
  );
  if (row?.done) return { done: true };
  return { done: false, state: row?.state ?? null, bodyPurged: row?.purged ?? false };
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

/** A new task ID for a deliberate second effect: random, so the downstream sees a new Idempotency-Key. */
const newTaskId = sql`'t_' || replace(gen_random_uuid()::text, '-', '')`;

/**
 * Copies each target into a new pending task with a new ID and the same stored bytes, linked by
 * `replay_of`, and notes the decision on both tasks.
 */
const replayInto = (targets: ReturnType<typeof sql>, who: Decider, detail: Record<string, unknown>) => sql`
    created as (
      insert into tasks (id, source, action, event_id, topic, delivery_id, state, body, content_type, body_sha256,
        after_task_id, replay_of)
      select ${newTaskId}, source, action, event_id, topic, delivery_id, ${TASK_STATES.pending}, body, content_type,
        body_sha256, after_task_id, id
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
const heldByRunningReplay = sql`tasks.id in (select trees.id from (${RUNNING_REPLAY_TREES}) trees where trees.running <> trees.id)`;

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
  input: { taskId: string; after?: string | null | undefined } & Decider,
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
    const [current] = await rowsOf<{ state: string; purged: boolean }>(
      tx,
      sql`select state, body is null as purged from tasks where id = ${input.taskId} for update`,
    );
    if (!current) return { done: false, state: null, bodyPurged: false };
    const refusal = { done: false, state: current.state, bodyPurged: current.purged } as const;
    if (current.purged || !(OPERATOR_RULES.replay.from as readonly string[]).includes(current.state)) return refusal;
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
      sql`with eligible as (select * from tasks where id = ${input.taskId}), ${replayInto(sql`eligible`, input, {})}
      select id as replay from created, (select pg_notify(${TASKS_CHANNEL}, '')) n`,
    );
    return { done: true, replay: row!.replay };
  });
}

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

/** The tasks the filter selects in a state the decision is allowed from, with a body to send. */
const sendable = (kind: BulkDecision, filter: TaskFilter) => sql`${bulkAllowed(kind, filter)} and tasks.body is not null`;

/** The tasks a bulk decision would change. */
const bulkTargets = (kind: BulkDecision, filter: TaskFilter) => sql`${sendable(kind, filter)} and not (${byReplay})`;

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
          changed as (
            update tasks t set state = ${TASK_STATES.pending}, next_attempt_at = now(), last_error = null, updated_at = now()
            from targets where t.id = targets.id
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

export type ResumeOutcome = { done: true } | { done: false; known: boolean };

/**
 * A person resumes a destination paused after a 401 or 403 — having fixed the credentials — so its tasks
 * are claimed again. Tasks that failed on the refusal stay failed: retrying them is a decision of its own.
 */
export async function resumeDestination(db: Db, input: { origin: string } & Decider): Promise<ResumeOutcome> {
  const [row] = await rowsOf<{ known: boolean; done: boolean }>(
    db,
    sql`
    with current as (
      select origin, paused_at, paused_reason from destinations where origin = ${input.origin} for update
    ),
    resumed as (
      update destinations d set paused_at = null, paused_reason = null, updated_at = now()
      from current c where d.origin = c.origin and c.paused_at is not null
      returning c.origin, c.paused_at, c.paused_reason
    ),
    noted as (
      insert into operator_actions (destination, kind, actor, note, detail)
      select origin, 'resume', ${input.actor}, ${input.note},
        jsonb_build_object('pausedAt', paused_at, 'pausedReason', paused_reason)
      from resumed
      returning id
    )
    select exists (select 1 from current) as known, exists (select 1 from resumed) as done,
      (select count(*) from resumed, pg_notify(${TASKS_CHANNEL}, '')) as notified`,
  );
  return row?.done ? { done: true } : { done: false, known: row?.known ?? false };
}
