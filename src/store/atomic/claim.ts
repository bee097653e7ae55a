/**
 * The forwarder's claim: which due tasks a worker takes and for what (a send, a lookup, a review), when the next
 * one falls due, the lease it holds while it sends, the reclaim of a lease that expired, and the hand-back of a
 * claim it never sent. How an attempt ends is finish.ts.
 *
 * The forwarder's statements, these and finish.ts's. Each state change is one statement guarded by the state it
 * expects (and, for a worker, by its lease), so two workers, a reaper and a person acting at once cannot both win.
 * Every time is the database's now(): workers on several hosts never compare their own clocks.
 */
import { sql } from 'drizzle-orm';
import type { DestinationLimit } from '../../config/destinations.ts';
import type { ActionConfig } from '../../config/schema.ts';
import type { Db } from '../connect.ts';
import { TASKS_CHANNEL, type TaskState } from '../decisions.ts';
import { PREPARED } from '../prepared.ts';
import { rowsOf } from '../rows.ts';

/**
 * An action's numbers that, with a task's own counts, decide what the claim of its unknown outcome does: the
 * database function oncehook_unknown_outcome_mode, which the claim and the views of what holds a task share.
 */
export interface OutcomeRule {
  keyed: boolean;
  keyRetentionMs: number;
  lookup: boolean;
  maxAttempts: number;
}

export const outcomeRuleOf = (action: ActionConfig): OutcomeRule => ({
  keyed: action.idempotency === 'key',
  keyRetentionMs: action.keyRetention,
  lookup: action.lookup !== undefined,
  maxAttempts: action.maxAttempts,
});

/** How the claim sees one configured action. Config is the routing table, so it is passed in, not stored. */
export interface ClaimRoute extends OutcomeRule {
  source: string;
  action: string;
  /** The downstream origin: cooldowns and pauses apply to it. */
  destination: string;
  /**
   * Where the action's lookups go, when it has one: a destination's limits count them there, and no lookup is asked
   * while it cools down or is paused.
   */
  lookupDestination: string | null;
  leaseMs: number;
  /**
   * The states of its due tasks this claim takes (absent: pending and outcome_unknown). A pending task's claim is a
   * send; an unknown outcome's may be a lookup, whose origin another destination may limit.
   */
  states?: readonly ('pending' | 'outcome_unknown')[];
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
  /**
   * The claim's number on its task (`tasks.claims`), which its finish or release names: the ledger row they write is
   * this claim's, and only while the task is still under it. Null for `review`, which sends nothing.
   */
  claim: number | null;
  /** Why a `review` claim holds the task for a person. */
  reason: string | null;
  /** `pending` or `outcome_unknown`: where an unsent claim goes back to. */
  priorState: TaskState;
  /** The URLs frozen with the task at ingest, for an action whose url or lookup names its delivery; else null. */
  requestUrl: string | null;
  lookupUrl: string | null;
}

/**
 * Claims up to `limit` due tasks in one call — graphile-worker's shape: lock with SKIP LOCKED, update — and notes
 * each claim on its task, so a crash after the claim still leaves the attempt on record (in flight, until the
 * reclaim of its lease writes its ledger row). An unknown outcome is reconciled by the rules of docs/forwarding.md
 * ("Outcome unknown"), decided there in database time: send again under the same key while the downstream still
 * keeps it, else ask the lookup, else hold it for a person. The statement and the planner settings it needs live
 * in the database function `oncehook_claim_batch` (src/store/functions/): one round trip per claim instead of a
 * transaction's four.
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
        left join lateral oncehook_claim_batch(${input.owner}, ${JSON.stringify(input.routes)}::jsonb, ${input.limit}::int) as c on true`,
  );
  const tasks: ClaimedTask[] = [];
  for (const { claimedAt: _, ...task } of rows) if (task.id !== null) tasks.push(task);
  return { tasks, at: rows[0]!.claimedAt };
}

/**
 * Claims due tasks of actions a destination limits (config `destinations`): at most as many as every origin of the
 * group allows now — requests in progress under `maxInFlight`, tokens in the bucket of `rateLimit` — counted and
 * taken under the origins' locks, so the limits hold across every worker of every instance. The claim itself is
 * `oncehook_claim_batch`'s; `oncehook_claim_batch_limited` wraps it.
 */
export async function claimLimited(
  db: Db,
  input: { owner: string; routes: readonly ClaimRoute[]; limits: readonly DestinationLimit[]; limit: number },
): Promise<ClaimedTask[]> {
  if (input.limit <= 0 || input.routes.length === 0) return [];
  return rowsOf<ClaimedTask>(
    db,
    sql`${PREPARED}select * from oncehook_claim_batch_limited(${input.owner}, ${JSON.stringify(input.routes)}::jsonb,
        ${JSON.stringify(input.limits)}::jsonb, ${input.limit}::int)`,
  );
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
export async function nextDueInMs(db: Db, claimedAt: string | null, rateLimits: readonly DestinationLimit[] = []): Promise<number | null> {
  // Only times after the last claim: a task due before it and not claimed is either locked by another worker
  // or blocked (a paused destination, a step waiting for its sibling), and a notification or the poll brings
  // it back; one that fell due since (a short backoff) is due now. The claim's time is the database's own:
  // measured in this process instead, a statement that started late on a busy machine put the line after a
  // retry that fell due in between, and the retry waited for the poll. No `greatest(0, …)` in the statement:
  // it skips nulls, so "nothing waits" came back as 0, and an idle forwarder looked again every 10 ms instead
  // of every poll (measured: 160 statements a second on an idle gateway).
  // A rate-limited origin whose bucket ran dry holds its tasks until its next token: then they may be claimed.
  const nextToken =
    rateLimits.length === 0
      ? sql``
      : sql`, (select min(b.refilled_at + (1 - b.tokens) / l."perSecond" * interval '1 second')
          from destination_budgets b
          join jsonb_to_recordset(${JSON.stringify(rateLimits)}::jsonb) as l(origin text, "perSecond" float8) on l.origin = b.origin
          where l."perSecond" is not null and b.tokens < 1
            and b.refilled_at + (1 - b.tokens) / l."perSecond" * interval '1 second' > now())`;
  const [row] = await rowsOf<{ ms: number | null }>(
    db,
    sql`${PREPARED}select (extract(epoch from least(
        (select min(next_attempt_at) from tasks where state in ('pending', 'outcome_unknown')
           and next_attempt_at > coalesce(${claimedAt}::timestamptz, now())),
        (select min(cooldown_until) from destinations where cooldown_until > now()),
        (select min(lease_expires_at) from tasks where state = 'in_progress')${nextToken}
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
 * resent) and the ledger records the attempt as such, from the claim the task notes. A result that comes back
 * later still replaces it (finish.ts).
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
      returning t.id, t.source, t.action, t.claims, t.attempts, t.claim_kind, t.claimed_at
    ),
    ledger as (
      insert into attempts (task_id, claim, number, kind, started_at, finished_at, class, decision, error)
      select id, claims, attempts, claim_kind, claimed_at, now(), 'lease_expired', 'outcome_unknown',
        'the worker stopped mid-attempt; the request may have reached the downstream'
      from reclaimed where claim_kind is not null
      on conflict (task_id, claim) do nothing
      returning id
    )
    select id, source, action from reclaimed`,
  );
}

// ─── Shutdown ────────────────────────────────────────────────────────────────────────────────────────────
// A stopping worker hands back only what it never sent. An attempt whose request was written ends through
// finishAttempts (finish.ts) as an unknown outcome, like any other: stopping must never make a sent request look
// unsent.

/**
 * Gives back a claim whose request was never written: the task is due again at once, in the state it was
 * claimed from — `pending`, or `outcome_unknown` for a keyed resend or a lookup, so the next claim checks
 * again whether the downstream still keeps the key — and the claim's count is taken back, so a shutdown costs
 * no attempt. The ledger records the claim as released. Only while this worker still holds the lease under this
 * claim; returns whether it did.
 */
export async function releaseUnsent(
  db: Db,
  input: { taskId: string; claim: number; owner: string; mode: ClaimMode; priorState: TaskState },
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
      -- This claim's, not a later one by the same process (see finishAttempts).
      where id = ${input.taskId} and lease_owner = ${input.owner} and state = 'in_progress' and claims = ${input.claim}
      returning id, claims, attempts, claim_kind, claimed_at
    ),
    -- Numbered as the claim numbered it, before its count was taken back.
    ledger as (
      insert into attempts (task_id, claim, number, kind, started_at, finished_at, class, decision)
      select id, claims, attempts + ${send ? 1 : 0}, claim_kind, claimed_at, now(), 'released',
        'released unsent: the worker stopped before writing the request'
      from task
      on conflict (task_id, claim) do nothing
      returning id
    )
    -- Another worker may be idle: it should take the task now, not at its next poll.
    select exists (select 1 from task) as released, (select pg_notify(${TASKS_CHANNEL}, '') from task)`,
  );
  return row?.released ?? false;
}
