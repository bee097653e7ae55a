/**
 * How an attempt ends: its ledger row, written whole, the task's next state (only while the worker still holds the
 * lease, as every statement of the forwarder is guarded: see claim.ts), and the destination an answer cooled down
 * or paused. Many attempts in one statement.
 */
import { sql } from 'drizzle-orm';
import type { Db } from '../connect.ts';
import { TASK_STATES, TASKS_CHANNEL, type TaskState } from '../decisions.ts';
import { PREPARED } from '../prepared.ts';
import { batchJson, rowsOf } from '../rows.ts';
import { orderKeysLocked } from './order-locks.ts';

/** The states an attempt may end its task in that release its ordered key. */
const ENDS = sql`(${TASK_STATES.succeeded}, ${TASK_STATES.failed}, ${TASK_STATES.cancelled})`;

/** A destination's standing changed by an answer: cooled down (429, 503) or paused (401, 403). */
export type DestinationChange = { origin: string; pause: string | null };

export interface AttemptFinish {
  taskId: string;
  /** The claim this attempt was sent under (ClaimedTask's). */
  claim: number;
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
  /** The claim's lookup is taken back: the answer spoke of the lookup's origin, not of the effect (decide.ts). */
  lookupNotCounted?: boolean;
}

/**
 * Ends attempts, many in one statement: each ledger row, each task (only while its worker still holds the lease
 * under this claim — a reclaimed task has moved on, and the ledger says this result was superseded) and the
 * destinations they cooled down or paused. Returns, in order, whether each task took its decision. Finishing in
 * batches shares one durable commit among many attempts, as ingest's group commit does for deliveries.
 */
export async function finishAttempts(db: Db, finishes: readonly AttemptFinish[]): Promise<boolean[]> {
  if (finishes.length === 0) return [];
  const rows = finishes.map((f, i) => ({
    i,
    taskId: f.taskId,
    claim: f.claim,
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
    uncounted: f.lookupNotCounted ?? false,
  }));
  const kept = await rowsOf<{ kept: boolean }>(
    db,
    sql`${PREPARED}
    with f as (
      select f.*, greatest(now() + f."delayMs" * interval '1 millisecond', coalesce(f."notBefore", now())) as next
      from json_to_recordset(${batchJson(rows)}::json) as f(i int, "taskId" text, claim int, owner text,
        status int, "durationMs" int, class text, error text, reference text, "requestSha256" text, decision text,
        state text, "delayMs" bigint, "notBefore" timestamptz, origin text, pause text, uncounted boolean)
    ),
    -- The ordered keys these finishes release (order-locks.ts), locked before any head ends: the release below reads
    -- them under these locks.
    -- Marked as a finish that releases its own keys: the settle trigger leaves its ended heads to the release
    -- below (oncehook_order_settle_row), where a previous build's finish, unmarked, is still settled row by row.
    keys as (
      select ${orderKeysLocked(sql`f join tasks t on t.id = f."taskId"`, sql`f.state in ${ENDS}`)} as locked,
        set_config('oncehook.finish_releases', 'on', true) as marked
    ),
    task as (
      update tasks t set state = f.state, next_attempt_at = f.next, lease_owner = null, lease_expires_at = null,
        lookups = t.lookups - f.uncounted::int,
        last_error = case when f.state = ${TASK_STATES.succeeded} then null else f.error end,
        result_reference = coalesce(f.reference, t.result_reference), updated_at = now()
      from f
      where t.id = f."taskId" and t.lease_owner = f.owner and t.state = 'in_progress'
        -- The owner names a process, not a claim: after a stall past its lease, the same process may have
        -- reclaimed the task and claimed it again. Only the claim the task is still under decides.
        and t.claims = f.claim
        and (select locked from keys) >= 0 and (select marked from keys) = 'on'
      returning t.id, t.source, t.action, t.order_key, t.order_mode, t.state, t.claims, t.attempts, t.claim_kind, t.claimed_at
    ),
    -- The keys whose heads ended, each releasing its next task (oncehook_order_release), in one call once every head
    -- of the batch has ended: reading task, the call waits for its update to complete. A batch that ends no ordered
    -- task calls nothing.
    released as (
      select oncehook_order_release(array_agg(t.source), array_agg(t.action), array_agg(t.order_key), array_agg(t.order_mode))
      from task t
      where t.order_key is not null and t.state in ${ENDS}
      having count(*) > 0
    ),
    -- PostgreSQL runs every data-modifying CTE to completion, read or not.
    -- The row written whole, once: the claim's, from the task still under it (started when it was claimed). Only a
    -- finish that moved its task writes it, and its claim has no row until then: no conflict to resolve, and an
    -- insert without ON CONFLICT writes one WAL record a row fewer (a speculative insert confirms each row).
    -- attempts_claim_key would refuse a second row all the same.
    ledger as (
      insert into attempts (task_id, claim, number, kind, started_at, finished_at, response_status, duration_ms, class,
        error, reference, request_sha256, decision)
      select f."taskId", f.claim, t.attempts, t.claim_kind, t.claimed_at, now(), f.status, f."durationMs", f.class,
        f.error, f.reference, f."requestSha256", f.decision
      -- By claim too: a batch may hold a stalled claim's late finish beside the finish of the task's next claim.
      from f join task t on t.id = f."taskId" and t.claims = f.claim
      returning id
    ),
    -- A finish not kept is either one sent again after its commit (the answer lost on the way), whose row stands,
    -- or a late one after a reclaim: its result, what actually came back, replaces the reclaim's guess.
    late as (
      update attempts a set finished_at = now(), response_status = f.status, duration_ms = f."durationMs",
        class = f.class, error = f.error, reference = f.reference, request_sha256 = f."requestSha256",
        decision = 'superseded: the lease had expired and the task was reclaimed'
      from f
      where a.task_id = f."taskId" and a.claim = f.claim and a.class = 'lease_expired'
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
    select exists (select 1 from task t where t.id = f."taskId" and t.claims = f.claim) as kept from f where (select count(*) from released) >= 0 order by f.i`,
  );
  return kept.map((row) => row.kept);
}

/**
 * Wakes every worker of every instance (TASKS_CHANNEL) when a due task of one of `waiting` (`state:source:action`, the
 * claims a freed slot of a `maxInFlight` origin may let go) is there to take; returns whether it did. Sent by the
 * worker whose finish freed the slot, after that finish committed: a NOTIFY in the finish's own transaction would
 * serialize every notifying commit database-wide (docs/performance.md), and the claims it wakes must see the slot
 * free anyway. The look walks tasks_due_idx as the claim does, and costs at most the claim it spares
 * every worker when nothing waits.
 */
export async function notifyIfWaiting(db: Db, waiting: readonly string[]): Promise<boolean> {
  const notified = await rowsOf<{ notify: unknown }>(
    db,
    sql`${PREPARED}select pg_notify(${TASKS_CHANNEL}, '')::text as notify
        where exists (select 1 from tasks t where t.state in ('pending', 'outcome_unknown') and t.next_attempt_at <= now()
          and t.state || ':' || t.source || ':' || t.action = any (array(select jsonb_array_elements_text(${JSON.stringify(waiting)}::jsonb))))`,
  );
  return notified.length > 0;
}
