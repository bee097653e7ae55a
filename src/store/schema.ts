import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  customType,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
} from 'drizzle-orm/pg-core';
import { txid } from './schema/txid.ts';

/** Raw body bytes: kept exactly as received, because signatures and downstream retries depend on them. */
const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({
  dataType: () => 'bytea',
});

const at = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/** An action that made no task of a delivery: `detail` names the field, its value and the condition. */
export interface SkippedAction {
  action: string;
  reason: 'topic' | 'filtered';
  detail: string;
}

/** Every receipt that verified, with the decision taken on it; the log an operator reads. */
export const deliveries = pgTable(
  'deliveries',
  {
    id: text('id').primaryKey(),
    /** Commit-ordered enough for cursors: one sequence shared by every instance. */
    seq: bigint('seq', { mode: 'number' }).generatedAlwaysAsIdentity().notNull(),
    txid: txid(),
    source: text('source').notNull(),
    deliveryId: text('delivery_id').notNull(),
    eventId: text('event_id').notNull(),
    topic: text('topic'),
    occurredAt: at('occurred_at'),
    receivedAt: at('received_at').notNull().defaultNow(),
    decision: text('decision').notNull(),
    /** The earlier receipt this one was matched against (duplicates only). */
    matchedDeliveryId: text('matched_delivery_id'),
    /**
     * Request headers with signatures and credentials redacted, on the first receipt of a request only; null on the
     * other events of a batch (`headersFrom`) and once retention purged them.
     */
    headers: jsonb('headers').$type<Record<string, string>>(),
    /** The receipt holding this one's headers: the first event of the same request (batches only). */
    headersFrom: text('headers_from'),
    contentType: text('content_type'),
    bodySha256: text('body_sha256').notNull(),
    bodyBytes: integer('body_bytes').notNull(),
    /** The actions that made no task of this delivery, and why: a topic or a filter that did not match. */
    skipped: jsonb('skipped').$type<SkippedAction[]>(),
  },
  (t) => [
    // A receipt's repeats, for the operator's view of it. Partial: a receipt accepted first needs no entry.
    index('deliveries_repeats_idx').on(t.matchedDeliveryId, t.seq).where(sql`matched_delivery_id is not null`),
    index('deliveries_page_idx').on(t.txid, t.seq),
    index('deliveries_source_event_idx').on(t.source, t.eventId),
    index('deliveries_source_delivery_idx').on(t.source, t.deliveryId),
    // The dashboard's charts count the last hour or day by receipt time. BRIN: rows arrive in time order, so a
    // summary of each 128 pages finds the window for 2 bytes of WAL a receipt, where a B-tree wrote 90 (migration 0017).
    index('deliveries_received_idx').using('brin', t.receivedAt).with({ autosummarize: true }),
    // A batch's other events, for the purge to see whether any of their tasks still holds a body. Partial: a
    // delivery of one event has no entry.
    index('deliveries_headers_from_idx').on(t.headersFrom).where(sql`headers_from is not null`),
    // What retention may strip of its headers, in the order it expires: a receipt leaves when its headers go.
    index('deliveries_headers_purge_idx').on(t.source, t.receivedAt, t.id).where(sql`headers is not null`),
  ],
);

/**
 * The dedup keys. A primary key per identity makes `INSERT … ON CONFLICT DO NOTHING` the one atomic
 * decision; the rows outlive body retention as tombstones so a late redelivery is still recognised.
 */
export const deliveryKeys = pgTable(
  'delivery_keys',
  {
    source: text('source').notNull(),
    deliveryId: text('delivery_id').notNull(),
    firstDelivery: text('first_delivery').notNull(),
    firstSeenAt: at('first_seen_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.source, t.deliveryId] })],
);

export const eventKeys = pgTable(
  'event_keys',
  {
    source: text('source').notNull(),
    eventId: text('event_id').notNull(),
    firstDelivery: text('first_delivery').notNull(),
    firstSeenAt: at('first_seen_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.source, t.eventId] })],
);

/**
 * One business task for one action: what the forwarder claims, sends, and records the outcome of. Its pages are
 * filled to 80 % (migration 0030): every claim and finish writes a new version of the row, which then fits on the
 * page it was on.
 */
export const tasks = pgTable(
  'tasks',
  {
    /** Derived from source + task key + action: stable forever, and the downstream's Idempotency-Key. */
    id: text('id').primaryKey(),
    source: text('source').notNull(),
    action: text('action').notNull(),
    eventId: text('event_id').notNull(),
    topic: text('topic'),
    /** The receipt that created the task. */
    deliveryId: text('delivery_id').notNull(),
    state: text('state').notNull(),
    /** The approved content: every attempt sends exactly these bytes with this content type. */
    body: bytea('body'),
    /**
     * The delivery's own bytes, kept beside a body its action's transform made of them: a replay is a new task with a
     * new ID, so its body is shaped again, with its own `$taskId`. Null where the body is the delivery's.
     */
    sourceBody: bytea('source_body'),
    contentType: text('content_type'),
    bodySha256: text('body_sha256').notNull(),
    /**
     * Where the task is sent, computed from its delivery when it was made, where the action's `url` names a field of
     * it: frozen with the body, so what a person approves is where it goes. `{key}` is left for the sending task's
     * ID. Null where the action's url names nothing of the delivery: the config's is used.
     */
    requestUrl: text('request_url'),
    /** The same for its lookup's URL. */
    lookupUrl: text('lookup_url'),
    /** The sibling task that must succeed before this one is sent (an action's `after`). */
    afterTaskId: text('after_task_id'),
    /** A deliberate second effect names the task it replays. */
    replayOf: text('replay_of'),
    /**
     * The replay down this task's chain (a replay of it, or of one of its replays) that succeeded: the effect exists.
     * Set by a trigger when a replay succeeds (migration 0011), so the attention queue tests a column, not the chain.
     */
    effectReplay: text('effect_replay'),
    /** Sends made so far: the next one carries `Oncehook-Attempt: attempts + 1`. */
    attempts: integer('attempts').notNull().default(0),
    /** Lookups asked about an unknown outcome; a budget, so an unanswering lookup ends in review. */
    lookups: integer('lookups').notNull().default(0),
    nextAttemptAt: at('next_attempt_at').notNull().defaultNow(),
    firstAttemptAt: at('first_attempt_at'),
    leaseOwner: text('lease_owner'),
    leaseExpiresAt: at('lease_expires_at'),
    /**
     * The last send or lookup claim: its number (never taken back, unlike `attempts` and `lookups`, so it names one
     * claim), time and kind. Its ledger row is written once, when it ends; until then these show it in flight, and a
     * reclaim of its lease writes the row from them (migration 0027). Unindexed: the claim writes them.
     */
    claims: integer('claims').notNull().default(0),
    claimedAt: at('claimed_at'),
    claimKind: text('claim_kind'),
    lastError: text('last_error'),
    /**
     * Why the action's transform made no body of the delivery: the task failed before any send, and `body` holds
     * the delivery's bytes, so that a retry after the config is fixed computes the transform again.
     */
    transformError: text('transform_error'),
    /** Where the request of the attempt in progress goes: a destination's `maxInFlight` counts these. */
    requestOrigin: text('request_origin'),
    resultReference: text('result_reference'),
    /** An ordered action's key, mode, position (`order.by`: a number or time in ms, else text; as written) and arrival. */
    orderKey: text('order_key'),
    orderMode: text('order_mode'),
    orderNumber: doublePrecision('order_number'),
    orderText: text('order_text'),
    orderBy: text('order_by'),
    orderSeq: bigint('order_seq', { mode: 'number' }),
    /** Held behind its key's unresolved task, out of the claim's reach (migration 0025); or overtaken by a newer one. */
    held: boolean('held').notNull().default(false),
    supersededBy: text('superseded_by'),
    /** The person who took a task that needs one; null while nobody has. */
    owner: text('owner'),
    /** Unindexed: the task list pages on task_refs' copy, which no update of the task rewrites. */
    txid: txid(),
    createdAt: at('created_at').notNull().defaultNow(),
    updatedAt: at('updated_at').notNull().defaultNow(),
  },
  (t) => [
    // Partial: almost no task is a replay, and every update of a task would otherwise write a null entry here.
    index('tasks_replay_idx').on(t.replayOf).where(sql`replay_of is not null`),
    // The replays still on their way, from which a bulk decision or a replay finds the replay trees it must leave
    // alone: a few rows, where the replays ever made grow with the history.
    index('tasks_running_replays_idx').on(t.replayOf).where(sql`replay_of is not null and state not in ('succeeded', 'failed', 'cancelled')`),
    index('tasks_due_idx').on(t.nextAttemptAt).where(sql`state in ('pending', 'outcome_unknown')`),
    // The steps still waiting for the one before them, which the attention queue looks through for those whose
    // predecessor will never succeed on its own: a few rows, where the pending tasks may be a large backlog.
    index('tasks_waiting_steps_idx').on(t.afterTaskId).where(sql`state = 'pending' and after_task_id is not null`),
    index('tasks_lease_idx').on(t.leaseExpiresAt).where(sql`state = 'in_progress'`),
    index('tasks_state_idx').on(t.state, t.createdAt),
    // An ordered key's head and the held task to release next; and the newest position sent, which only mode latest
    // reads: a task in sequence, sent and finished, would add two entries to keep for nothing.
    index('tasks_order_open_idx')
      .on(t.source, t.action, t.orderKey, t.held, t.orderNumber, t.orderText, t.orderSeq)
      .where(sql`order_key is not null and state in ('pending', 'in_progress', 'outcome_unknown', 'needs_review', 'awaiting_approval')`),
    index('tasks_order_latest_sent_idx')
      .on(t.source, t.action, t.orderKey, t.orderNumber, t.orderText, t.orderSeq)
      .where(sql`order_mode = 'latest' and first_attempt_at is not null`),
    // What retention may purge, in the order it expires: a finished task enters when it finishes and leaves
    // when its body goes, so a purge reads what it purges and never the tombstones behind it.
    index('tasks_purge_idx')
      .on(t.source, t.updatedAt, t.id)
      .where(sql`body is not null and state in ('succeeded', 'failed', 'cancelled', 'superseded')`),
  ],
);

/**
 * A task's keys that never change, written once when the task is inserted (a trigger, migration 0007) and
 * never updated. The admin lookups by page, receipt and event walk these indexes: on `tasks` every claim and
 * finish, which change `state` and so cannot be HOT updates, wrote an entry into each of them.
 */
export const taskRefs = pgTable(
  'task_refs',
  {
    taskId: text('task_id').primaryKey(),
    source: text('source').notNull(),
    eventId: text('event_id').notNull(),
    deliveryId: text('delivery_id').notNull(),
    /** The task's own `txid`: the transaction that inserted the task. */
    txid: txid(),
  },
  (t) => [
    index('task_refs_page_idx').on(t.txid, t.taskId),
    index('task_refs_delivery_idx').on(t.deliveryId),
    // Event first: the task list filters by event with or without a source.
    index('task_refs_event_idx').on(t.eventId, t.source),
  ],
);

/**
 * A downstream origin's standing: cooled down after a 429 or 503 so no task hits it until `cooldownUntil`,
 * paused after a 401 or 403 until a person resumes it. Absent row: open.
 */
export const destinations = pgTable('destinations', {
  origin: text('origin').primaryKey(),
  cooldownUntil: at('cooldown_until'),
  pausedAt: at('paused_at'),
  pausedReason: text('paused_reason'),
  updatedAt: at('updated_at').notNull().defaultNow(),
});

/**
 * A rate-limited origin's token bucket, shared by every worker: `tokens` as of `refilledAt`, refilled since at
 * the configured rate up to the burst. The limits themselves are config, passed with each claim.
 */
export const destinationBudgets = pgTable('destination_budgets', {
  origin: text('origin').primaryKey(),
  tokens: doublePrecision('tokens').notNull(),
  refilledAt: at('refilled_at').notNull().defaultNow(),
});

/**
 * What a person decided about a task (or a destination), with their note and the label of the token they
 * used: the other half of the run ledger.
 */
export const operatorActions = pgTable(
  'operator_actions',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    taskId: text('task_id'),
    /** Set instead of the task for a decision about a destination (resuming a paused one). */
    destination: text('destination'),
    kind: text('kind').notNull(),
    /** The label of the admin token that made the decision. */
    actor: text('actor').notNull(),
    note: text('note').notNull(),
    /** What the decision was about, e.g. the hash of the approved bytes. */
    detail: jsonb('detail').$type<Record<string, unknown>>(),
    createdAt: at('created_at').notNull().defaultNow(),
  },
  (t) => [index('operator_actions_task_idx').on(t.taskId, t.id)],
);

/**
 * Tasks entering a state that waits for a person, written by a trigger (migration 0014) and consumed by the alert
 * watcher: a queue, so each entry is counted once whichever instance reads it, and the table stays small.
 */
export const taskTransitions = pgTable('task_transitions', {
  id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
  taskId: text('task_id').notNull(),
  source: text('source').notNull(),
  action: text('action').notNull(),
  state: text('state').notNull(),
  at: at('at').notNull().defaultNow(),
});

/** Where each alert's condition stands: open or not, when it last sent, and what it gathered since. */
export const alertStates = pgTable(
  'alert_states',
  {
    alert: text('alert').notNull(),
    condition: text('condition').notNull(),
    open: boolean('open').notNull().default(false),
    lastSentAt: at('last_sent_at'),
    /** Messages made so far: the next one's task ID is derived from it, so it is made once. */
    sequence: integer('sequence').notNull().default(0),
    /** What happened since the last message: counts, a few task IDs, by source and action. */
    gathered: jsonb('gathered').$type<Record<string, unknown>>().notNull().default({}),
  },
  (t) => [primaryKey({ columns: [t.alert, t.condition] })],
);

/**
 * Deliveries answered 401, counted per source and failed check by each process and written a few seconds at a time:
 * a sender whose secret was rotated shows here whichever instance it reached. Nothing of the request is kept.
 */
export const signatureFailures = pgTable(
  'signature_failures',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    source: text('source').notNull(),
    check: text('check').notNull(),
    count: integer('count').notNull(),
    at: at('at').notNull().defaultNow(),
  },
  (t) => [index('signature_failures_at_idx').on(t.at)],
);


/**
 * The bytes a receipt carried, kept to be read and searched by a person until the source's retention purges them
 * with the receipt's headers. A duplicate_delivery keeps none: it is the same request again (a replay of a signed
 * request must cost nothing), and shows the bytes of the receipt it repeats. Apart from `deliveries` so that its
 * lists and counts read narrow rows.
 */
export const deliveryBodies = pgTable(
  'delivery_bodies',
  {
    deliveryId: text('delivery_id').primaryKey(),
    body: bytea('body').notNull(),
  },
  (t) => [
    // Content search (`?match=`): the body read as JSON where it is JSON (oncehook_body_json, migration 0022), its
    // paths and values hashed. An index of the bytes rather than a jsonb copy of them: the body is stored once.
    index('delivery_bodies_json_idx').using('gin', sql`oncehook_body_json(${t.body}) jsonb_path_ops`),
  ],
);

/**
 * Requests refused at ingest (a bad signature, a missing header, a body too large, …), counted per source, reason and
 * minute by each process and added here a few seconds at a time: several instances' counts add up. Rows older than
 * a day are deleted at each write, so the table holds at most sources × reasons × 1,440 rows whatever the volume.
 */
export const rejectionCounts = pgTable(
  'rejection_counts',
  {
    minute: at('minute').notNull(),
    source: text('source').notNull(),
    reason: text('reason').notNull(),
    count: bigint('count', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.minute, t.source, t.reason] })],
);

/**
 * The latest few refused requests per source and reason: when, from where, and the names of their headers — never a
 * value or a byte of the body. Cut to the newest few per pair at each write.
 */
export const rejectionSamples = pgTable(
  'rejection_samples',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    source: text('source').notNull(),
    reason: text('reason').notNull(),
    at: at('at').notNull(),
    remoteAddress: text('remote_address'),
    headerNames: jsonb('header_names').$type<string[]>().notNull(),
  },
  (t) => [index('rejection_samples_pair_idx').on(t.source, t.reason, t.at)],
);
export { attempts } from './schema/attempts.ts';
export { instances } from './schema/instances.ts';
