/**
 * The statements that decide atomicity. Every "is this new?" question is answered by a write — an
 * `INSERT … ON CONFLICT DO NOTHING RETURNING` on a primary key — never by a read before a write, so two
 * requests or two instances racing on the same key cannot both see "new". Routes and workers call these
 * functions; they never compose SQL themselves.
 */
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Db } from './connect.ts';
import { DECISIONS, TASK_STATES, TASKS_CHANNEL, type Decision, type TaskState } from './decisions.ts';
import { deliveries, deliveryKeys, eventKeys, tasks } from './schema.ts';

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

/** The outcome of recording one receipt, with the record it matched, from the same transaction. */
export type Recorded =
  | { decision: typeof DECISIONS.accepted; receivedAt: Date; created: TaskSummary[]; existing: TaskSummary[] }
  | {
      decision: Exclude<Decision, typeof DECISIONS.accepted>;
      receivedAt: Date;
      firstSeen: FirstSeen;
      existing: TaskSummary[];
    };

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

interface Decided {
  decision: Decision;
  /** The receipt that first carried what this one repeats. */
  first?: string;
  created: TaskSummary[];
}

const byKey = <T>(key: (item: T) => string) => (a: T, b: T) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0);

/**
 * Records a batch of verified receipts in one transaction — one durable commit for all of them (group
 * commit) — with exactly the decisions each would get alone, in arrival order: a repeat inside the batch is
 * a duplicate of the earlier receipt, as it would be of a committed one. Each stage inserts its keys sorted,
 * so concurrent batches take row locks in one order and cannot deadlock. The delivery key, the event key,
 * the tasks, the receipts and the forwarder's wake-up commit together or not at all.
 */
export async function recordDeliveries(db: Db, inputs: readonly ReceiptInput[]): Promise<Recorded[]> {
  if (inputs.length === 0) return [];
  return db.transaction(async (tx) => {
    const decided: Decided[] = inputs.map(() => ({ decision: DECISIONS.accepted, created: [] }));
    const all = inputs.map((_, i) => i);

    const deliveryStage = await claimKeys(tx, 'delivery', inputs, all);
    for (const [i, first] of deliveryStage.repeats) decided[i] = { decision: DECISIONS.duplicateDelivery, first, created: [] };
    const eventStage = await claimKeys(tx, 'event', inputs, deliveryStage.fresh);
    for (const [i, first] of eventStage.repeats) decided[i] = { decision: DECISIONS.duplicateEvent, first, created: [] };
    await createTasks(tx, inputs, eventStage.fresh, decided);

    const rows = await tx
      .insert(deliveries)
      .values(
        inputs.map((input, i) => ({
          id: input.id,
          source: input.source,
          deliveryId: input.deliveryId,
          eventId: input.eventId,
          topic: input.topic,
          occurredAt: input.occurredAt,
          decision: decided[i]!.decision,
          matchedDeliveryId: decided[i]!.first ?? null,
          headers: input.headers,
          contentType: input.contentType,
          bodySha256: input.bodySha256,
          bodyBytes: input.body.byteLength,
        })),
      )
      .returning({ id: deliveries.id, receivedAt: deliveries.receivedAt });
    if (decided.some((d) => d.created.length > 0)) await tx.execute(sql`select pg_notify(${TASKS_CHANNEL}, '')`);

    const receivedAt = new Map(rows.map((row) => [row.id, row.receivedAt]));
    const firstSeen = await receipts(tx, decided.flatMap((d) => (d.first ? [d.first] : [])));
    const summaries = await taskSummaries(tx, inputs.flatMap((input) => input.tasks.map((task) => task.id)));
    return inputs.map((input, i): Recorded => {
      const { decision, first, created } = decided[i]!;
      const createdIds = new Set(created.map((task) => task.id));
      const existing = input.tasks.flatMap((task) => {
        const summary = summaries.get(task.id);
        return summary && !createdIds.has(task.id) ? [summary] : [];
      });
      if (decision === DECISIONS.accepted) return { decision, receivedAt: receivedAt.get(input.id)!, created, existing };
      return { decision, receivedAt: receivedAt.get(input.id)!, firstSeen: firstSeen.get(first!)!, existing };
    });
  });
}

/**
 * Inserts the delivery or event key of each candidate; returns the candidates whose key was new ("fresh")
 * and, for every other, the receipt that holds the key. An empty RETURNING for a key means another
 * transaction committed it first (the insert waited for it), so the follow-up read sees that row: the read
 * explains the decision, the insert made it.
 */
async function claimKeys(tx: Tx, kind: 'delivery' | 'event', inputs: readonly ReceiptInput[], candidates: number[]) {
  const table = kind === 'delivery' ? deliveryKeys : eventKeys;
  const column = kind === 'delivery' ? deliveryKeys.deliveryId : eventKeys.eventId;
  const idOf = (i: number) => (kind === 'delivery' ? inputs[i]!.deliveryId : inputs[i]!.eventId);
  const keyOf = (i: number) => `${inputs[i]!.source}\0${idOf(i)}`;

  const leaders = new Map<string, number>();
  for (const i of candidates) if (!leaders.has(keyOf(i))) leaders.set(keyOf(i), i);
  const ordered = [...leaders.values()].sort(byKey(keyOf));
  const fresh = new Set<string>();
  if (ordered.length > 0) {
    const keys = ordered.map((i) => inputs[i]!);
    const inserted =
      kind === 'delivery'
        ? await tx
            .insert(deliveryKeys)
            .values(keys.map((input) => ({ source: input.source, deliveryId: input.deliveryId, firstDelivery: input.id })))
            .onConflictDoNothing()
            .returning({ source: deliveryKeys.source, id: deliveryKeys.deliveryId })
        : await tx
            .insert(eventKeys)
            .values(keys.map((input) => ({ source: input.source, eventId: input.eventId, firstDelivery: input.id })))
            .onConflictDoNothing()
            .returning({ source: eventKeys.source, id: eventKeys.eventId });
    for (const row of inserted) fresh.add(`${row.source}\0${row.id}`);
  }

  const holder = new Map<string, string>();
  for (const i of ordered) if (fresh.has(keyOf(i))) holder.set(keyOf(i), inputs[i]!.id);
  const known = ordered.filter((i) => !fresh.has(keyOf(i)));
  if (known.length > 0) {
    const rows = await tx
      .select({ source: table.source, id: column, first: table.firstDelivery })
      .from(table)
      .where(inArray(column, known.map(idOf)));
    for (const row of rows) holder.set(`${row.source}\0${row.id}`, row.first);
  }

  const freshCandidates: number[] = [];
  const repeats = new Map<number, string>();
  for (const i of candidates) {
    if (fresh.has(keyOf(i)) && leaders.get(keyOf(i)) === i) freshCandidates.push(i);
    else repeats.set(i, holder.get(keyOf(i))!);
  }
  return { fresh: freshCandidates, repeats };
}

/** Creates the tasks of the receipts that carried a new event; a receipt all of whose tasks exist is a duplicate_task. */
async function createTasks(tx: Tx, inputs: readonly ReceiptInput[], carriers: number[], decided: Decided[]): Promise<void> {
  const owner = new Map<string, number>();
  for (const i of carriers) for (const task of inputs[i]!.tasks) if (!owner.has(task.id)) owner.set(task.id, i);
  if (owner.size === 0) return;

  const rows = [...owner.entries()].sort(byKey(([id]) => id)).map(([id, i]) => {
    const input = inputs[i]!;
    const task = input.tasks.find((t) => t.id === id)!;
    return {
      id,
      source: input.source,
      action: task.action,
      eventId: input.eventId,
      topic: input.topic,
      deliveryId: input.id,
      state: task.state,
      body: input.body,
      contentType: input.contentType,
      bodySha256: input.bodySha256,
      afterTaskId: task.afterTaskId,
    };
  });
  const created = await tx
    .insert(tasks)
    .values(rows)
    .onConflictDoNothing()
    .returning({ id: tasks.id, action: tasks.action, state: tasks.state });
  const createdById = new Map(created.map((task) => [task.id, task]));

  const creatorOf = new Map<string, string>();
  for (const [id, i] of owner) if (createdById.has(id)) creatorOf.set(id, inputs[i]!.id);
  const unowned = carriers.flatMap((i) => inputs[i]!.tasks.map((t) => t.id)).filter((id) => !creatorOf.has(id));
  if (unowned.length > 0) {
    const rows = await tx.select({ id: tasks.id, deliveryId: tasks.deliveryId }).from(tasks).where(inArray(tasks.id, unowned));
    for (const row of rows) creatorOf.set(row.id, row.deliveryId);
  }

  for (const i of carriers) {
    const own = inputs[i]!.tasks.flatMap((task) => (owner.get(task.id) === i && createdById.has(task.id) ? [createdById.get(task.id)!] : []));
    if (own.length > 0 || inputs[i]!.tasks.length === 0) decided[i] = { decision: DECISIONS.accepted, created: own };
    else decided[i] = { decision: DECISIONS.duplicateTask, first: creatorOf.get(inputs[i]!.tasks[0]!.id)!, created: [] };
  }
}

async function receipts(tx: Tx, ids: string[]): Promise<Map<string, FirstSeen>> {
  if (ids.length === 0) return new Map();
  const rows = await tx
    .select({
      id: deliveries.id,
      deliveryId: deliveries.deliveryId,
      eventId: deliveries.eventId,
      receivedAt: deliveries.receivedAt,
      decision: deliveries.decision,
    })
    .from(deliveries)
    .where(inArray(deliveries.id, [...new Set(ids)]));
  return new Map(rows.map((row) => [row.id, row]));
}

async function taskSummaries(tx: Tx, ids: string[]): Promise<Map<string, TaskSummary>> {
  if (ids.length === 0) return new Map();
  const rows = await tx
    .select({ id: tasks.id, action: tasks.action, state: tasks.state })
    .from(tasks)
    .where(inArray(tasks.id, [...new Set(ids)]));
  return new Map(rows.map((row) => [row.id, row]));
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
}

async function rowsOf<T>(db: Db, query: ReturnType<typeof sql>): Promise<T[]> {
  const result = (await db.execute(query)) as unknown as T[] | { rows: T[] };
  return Array.isArray(result) ? result : result.rows;
}

const routesTable = (routes: readonly ClaimRoute[]) => sql`(
  select * from jsonb_to_recordset(${JSON.stringify(routes)}::jsonb) as r(
    source text, action text, destination text, "keyed" boolean, "keyRetentionMs" bigint,
    "lookup" boolean, "maxAttempts" int, "leaseMs" bigint))`;

/**
 * The tasks a worker may act on, and from when: pending ones whose `after` sibling has succeeded, and
 * unknown outcomes to reconcile — of a configured action whose destination is not paused. A cooling
 * destination's tasks become due when the cooldown ends.
 */
const candidates = (routes: readonly ClaimRoute[]) => sql`
  from tasks t
  join ${routesTable(routes)} r on r.source = t.source and r.action = t.action
  left join destinations d on d.origin = r.destination
  where t.state in ('pending', 'outcome_unknown')
    and d.paused_at is null
    and (t.state = 'outcome_unknown' or t.after_task_id is null
         or exists (select 1 from tasks s where s.id = t.after_task_id and s.state = 'succeeded'))`;

const dueAt = sql`greatest(t.next_attempt_at, coalesce(d.cooldown_until, '-infinity'))`;

/**
 * Claims up to `limit` due tasks in one statement — graphile-worker's shape: lock with SKIP LOCKED, update,
 * open a ledger row — so a crash after the claim still leaves the attempt on record. An unknown outcome is
 * reconciled by the rules of CONTRACT.md, decided here in database time: send again under the same key
 * while the downstream still keeps it, else ask the lookup, else hold it for a person.
 */
export async function claimTasks(
  db: Db,
  input: { owner: string; routes: readonly ClaimRoute[]; limit: number },
): Promise<ClaimedTask[]> {
  if (input.limit <= 0 || input.routes.length === 0) return [];
  return rowsOf<ClaimedTask>(
    db,
    sql`
    with due as (
      select t.id, r."leaseMs" as lease_ms,
        case
          when t.state = 'pending' then 'send'
          when r."keyed" and t.attempts < r."maxAttempts"
            and t.first_attempt_at > now() - r."keyRetentionMs" * interval '1 millisecond' then 'send'
          when r."lookup" and t.lookups < r."maxAttempts" then 'lookup'
          else 'review'
        end as mode,
        case
          when r."lookup" then 'outcome unknown: the lookup answered neither yes nor no, ' || t.lookups || ' times'
          when r."keyed" and t.attempts >= r."maxAttempts" then 'outcome unknown after the last allowed attempt, and the action has no lookup'
          when r."keyed" then 'outcome unknown: the first attempt is older than the downstream keeps idempotency keys, and the action has no lookup'
          else 'outcome unknown: the action honours no idempotency key and has no lookup'
        end as reason
      ${candidates(input.routes)}
        and t.next_attempt_at <= now() and ${dueAt} <= now()
      order by t.next_attempt_at
      limit ${input.limit}
      for update of t skip locked
    ),
    claimed as (
      update tasks t set
        state = case when due.mode = 'review' then 'needs_review' else 'in_progress' end,
        attempts = t.attempts + (due.mode = 'send')::int,
        lookups = t.lookups + (due.mode = 'lookup')::int,
        first_attempt_at = case when due.mode = 'send' then coalesce(t.first_attempt_at, now()) else t.first_attempt_at end,
        lease_owner = case when due.mode = 'review' then null else ${input.owner} end,
        lease_expires_at = case when due.mode = 'review' then null else now() + due.lease_ms * interval '1 millisecond' end,
        last_error = case when due.mode = 'review' then due.reason else t.last_error end,
        updated_at = now()
      from due where t.id = due.id
      returning t.id, t.source, t.action, t.event_id, t.topic, t.body, t.content_type, t.attempts, t.lookups,
        due.mode, due.reason
    ),
    ledger as (
      insert into attempts (task_id, number, kind)
      select id, attempts, mode from claimed where mode <> 'review'
      returning id, task_id
    )
    select c.id, c.source, c.action, c.event_id as "eventId", c.topic, c.body, c.content_type as "contentType",
      c.attempts, c.lookups, c.mode, l.id::int as "attemptId", case when c.mode = 'review' then c.reason end as reason
    from claimed c left join ledger l on l.task_id = c.id`,
  );
}

/** Milliseconds until the next task may be due (0 when one already is), or null when nothing waits. */
export async function nextDueInMs(db: Db, routes: readonly ClaimRoute[]): Promise<number | null> {
  const [row] = await rowsOf<{ ms: number | null }>(
    db,
    sql`select greatest(0, extract(epoch from least(
        (select min(${dueAt}) ${candidates(routes)}),
        (select min(lease_expires_at) from tasks where state = 'in_progress')
      ) - now()) * 1000)::float8 as ms`,
  );
  return row?.ms ?? null;
}

/** Pushes a held lease forward; false when it is no longer this worker's (it expired and was reclaimed). */
export async function renewLease(db: Db, input: { taskId: string; owner: string; leaseMs: number }): Promise<boolean> {
  const renewed = await rowsOf<{ id: string }>(
    db,
    sql`update tasks set lease_expires_at = now() + ${input.leaseMs} * interval '1 millisecond'
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
    sql`
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
 * Closes an attempt: the ledger row, the task (only while this worker still holds its lease — a reclaimed
 * task has moved on, and the ledger says this result was superseded) and the destination, in one statement.
 * Returns whether the task took the decision.
 */
export async function finishAttempt(db: Db, f: AttemptFinish): Promise<boolean> {
  const next = sql`greatest(now() + ${f.delayMs} * interval '1 millisecond', coalesce(${f.notBefore?.toISOString() ?? null}::timestamptz, now()))`;
  const [row] = await rowsOf<{ kept: boolean }>(
    db,
    sql`
    with task as (
      update tasks set state = ${f.state}, next_attempt_at = ${next}, lease_owner = null, lease_expires_at = null,
        last_error = ${f.state === TASK_STATES.succeeded ? null : f.error},
        result_reference = coalesce(${f.reference}, result_reference), updated_at = now()
      where id = ${f.taskId} and lease_owner = ${f.owner} and state = 'in_progress'
      returning id
    ),
    -- PostgreSQL runs every data-modifying CTE to completion, read or not.
    ledger as (
      update attempts set finished_at = now(), response_status = ${f.status}, duration_ms = ${Math.round(f.durationMs)},
        class = ${f.class}, error = ${f.error}, reference = ${f.reference}, request_sha256 = ${f.requestSha256},
        decision = case when exists (select 1 from task) then ${f.decision}
                        else 'superseded: the lease had expired and the task was reclaimed' end
      where id = ${f.attemptId}
      returning id
    ),
    destination as (
      insert into destinations (origin, cooldown_until, paused_at, paused_reason, updated_at)
      select ${f.destination?.origin ?? null}::text,
        case when ${f.destination?.pause ?? null}::text is null then ${next} end,
        case when ${f.destination?.pause ?? null}::text is not null then now() end,
        ${f.destination?.pause ?? null}::text, now()
      where ${f.destination?.origin ?? null}::text is not null
      on conflict (origin) do update set
        cooldown_until = greatest(destinations.cooldown_until, excluded.cooldown_until),
        paused_at = coalesce(destinations.paused_at, excluded.paused_at),
        paused_reason = coalesce(destinations.paused_reason, excluded.paused_reason),
        updated_at = now()
      returning origin
    )
    select exists (select 1 from task) as kept`,
  );
  return row?.kept ?? false;
}

export type ApproveResult =
  | { approved: true }
  | { approved: false; state: string | null };

/**
 * A person lets an `awaiting_approval` task's first send go, with its stored bytes: the state change, the
 * note (with the hash of the bytes approved) and the forwarder's wake-up commit together.
 */
export async function approveTask(db: Db, input: { taskId: string; note: string }): Promise<ApproveResult> {
  const approved = await rowsOf<{ id: string }>(
    db,
    sql`
    with approved as (
      update tasks set state = 'pending', next_attempt_at = now(), updated_at = now()
      where id = ${input.taskId} and state = 'awaiting_approval'
      returning id, body_sha256
    ),
    noted as (
      insert into operator_actions (task_id, kind, note, detail)
      select id, 'approve', ${input.note}, jsonb_build_object('bodySha256', body_sha256) from approved
      returning id
    )
    select a.id, pg_notify(${TASKS_CHANNEL}, '') from approved a`,
  );
  if (approved.length > 0) return { approved: true };
  const [current] = await db.select({ state: tasks.state }).from(tasks).where(eq(tasks.id, input.taskId));
  return { approved: false, state: current?.state ?? null };
}
