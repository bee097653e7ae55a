/**
 * Ingest's record: whether each receipt is new or a duplicate (of a delivery, an event or a task), and the tasks
 * it creates. Every "is this new?" question is answered by a write — an `INSERT … ON CONFLICT DO NOTHING RETURNING`
 * on a primary key — never by a read before a write, so two requests or two instances racing on the same key cannot
 * both see "new". Routes and workers call these functions; they never compose SQL themselves.
 */
import { sql } from 'drizzle-orm';
import type { Db } from '../connect.ts';
import { DECISIONS, TASKS_CHANNEL, type Decision, type TaskState } from '../decisions.ts';
import { PREPARED } from '../prepared.ts';
import { batchJson, rowsOf } from '../rows.ts';
import type { SkippedAction } from '../schema.ts';
import { isOrderError, ORDER_FAILED, type OrderPlace } from '../../shape/order.ts';
import { URL_FAILED } from '../../shape/url-template.ts';

export interface NewTask {
  id: string;
  action: string;
  state: TaskState;
  afterTaskId: string | null;
  /** What the action's transform made of the delivery: the task's own bytes; absent, it sends the receipt's. */
  shaped?: { body: Uint8Array; contentType: string; bodySha256: string };
  /** Why the action's transform made nothing: the task is created failed, keeping the receipt's bytes for a retry. */
  transformError?: string;
  /** The URLs its action's templates made of the delivery, frozen with its body (null: the config's is used). */
  requestUrl?: string | null;
  lookupUrl?: string | null;
  /**
   * Why its URL, or its order's key or position, could not be made of the delivery: created failed as a failed
   * transform's task is.
   */
  requestError?: string;
  /** Its key and position, for an action with `order`: the database holds it behind its key's earlier tasks. */
  order?: OrderPlace;
}

export interface ReceiptInput {
  id: string;
  source: string;
  deliveryId: string;
  eventId: string;
  topic: string | null;
  occurredAt: Date | null;
  /**
   * The request's headers, redacted. The receipts of one request (a batch's events) share one object: it is stored
   * once, with the first of them, and the others name that receipt.
   */
  headers: Record<string, string>;
  contentType: string | null;
  body: Uint8Array;
  bodySha256: string;
  /** The tasks this receipt names, sorted by ID so concurrent writers take row locks in one order. */
  tasks: NewTask[];
  /** The actions that made no task of it, and why. */
  skipped: SkippedAction[];
  /**
   * A sender's check of the endpoint: recorded as `handshake`, making no task. It claims its delivery key, so a
   * replay of it is a `duplicate_delivery` that writes nothing.
   */
  handshake?: boolean;
  /**
   * Its delivery or event key was found recorded before it was planned (known-keys.ts), so its tasks are only named,
   * unshaped and unfiltered. The record refuses it, and the whole batch with it, if it would create anything.
   */
  known?: boolean;
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
 * ID it was stored under: a batch written again after a lost connection is stored under new IDs. A repeated
 * handshake is stored under none: its receipt is the first one's.
 */
export type Recorded =
  | { receipt: string; decision: typeof DECISIONS.accepted; receivedAt: Date; created: TaskSummary[]; existing: TaskSummary[] }
  | { receipt: string; decision: typeof DECISIONS.handshake; receivedAt: Date; existing: TaskSummary[] }
  | {
      receipt: string;
      decision: Exclude<Decision, typeof DECISIONS.accepted | typeof DECISIONS.handshake>;
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
 * The stages run in the database function `oncehook_record_deliveries` (src/store/functions/), and the receipts'
 * bytes are kept beside them by the same statement: one round trip per batch instead of one per stage. Measured,
 * the stages' round trips were the gateway's largest cost — each a socket write and a parse — and a batch's latency
 * was their sum.
 */
export async function recordDeliveries(db: Db, inputs: readonly ReceiptInput[]): Promise<Recorded[]> {
  if (inputs.length === 0) return [];
  // Only the first receipt of a delivery key in a batch can create tasks (the function's first stage lets no
  // later one pass), so a later one's body is never read and is not sent: in a storm of one delivery that is
  // nearly the whole batch.
  const keys = new Set<string>();
  // The first receipt of each headers object holds it; by identity, so a batch written again under new IDs still
  // names its own first receipt.
  const holders = new Map<Record<string, string>, string>();
  const batch = inputs.map((input, i) => {
    const key = `${input.source}\n${input.deliveryId}`;
    const bodyRead = !keys.has(key);
    keys.add(key);
    const holder = holders.get(input.headers);
    if (holder === undefined) holders.set(input.headers, input.id);
    return {
      i,
      id: input.id,
      source: input.source,
      delivery_id: input.deliveryId,
      event_id: input.eventId,
      topic: input.topic,
      occurred_at: input.occurredAt,
      headers: holder === undefined ? input.headers : null,
      headers_from: holder ?? null,
      content_type: input.contentType,
      body: bodyRead ? base64(input.body) : null,
      body_sha256: input.bodySha256,
      body_bytes: input.body.byteLength,
      tasks: input.tasks.map((task) => ({
        id: task.id,
        action: task.action,
        state: task.state,
        after_task_id: task.afterTaskId,
        ...(bodyRead && task.shaped
          ? { body: base64(task.shaped.body), content_type: task.shaped.contentType, body_sha256: task.shaped.bodySha256 }
          : {}),
        ...(task.transformError === undefined ? {} : { transform_error: task.transformError }),
        ...(task.requestUrl ? { url: task.requestUrl } : {}),
        ...(task.lookupUrl ? { lookup_url: task.lookupUrl } : {}),
        ...(task.order
          ? {
              order_key: task.order.key,
              order_mode: task.order.mode,
              order_number: task.order.number,
              order_text: task.order.text,
              order_by: task.order.shown,
            }
          : {}),
        ...(task.requestError === undefined ? {} : failedWords(task.requestError)),
      })),
      skipped: input.skipped.length > 0 ? input.skipped : null,
      ...(input.handshake ? { handshake: true } : {}),
      ...(input.known ? { known: true } : {}),
    };
  });
  // A batch with a receipt recorded unplanned goes through oncehook_record_known_deliveries' check; the others as before.
  const record = inputs.some((input) => input.known) ? sql`oncehook_record_known_deliveries` : sql`oncehook_record_deliveries`;
  const [row] = await rowsOf<{ recorded: RecordedRow[] }>(
    db,
    sql`${PREPARED}with input as (select ${batchJson(batch)}::json as batch),
      recorded as (select ${record}(input.batch, ${TASKS_CHANNEL}) as recorded from input),
      ${keptBodies}
      select recorded from recorded`,
  );
  return row!.recorded.map((r, i): Recorded => {
    const receipt = inputs[i]!.id;
    const receivedAt = new Date(Math.floor(r.receivedMs));
    if (r.decision === DECISIONS.accepted) return { receipt, decision: r.decision, receivedAt, created: r.created, existing: r.existing };
    if (r.decision === DECISIONS.handshake) return { receipt, decision: r.decision, receivedAt, existing: [] };
    const { receivedMs, ...first } = r.first!;
    return {
      receipt: inputs[i]!.handshake ? first.id : receipt,
      decision: r.decision,
      receivedAt,
      firstSeen: { ...first, receivedAt: new Date(Math.floor(receivedMs)) },
      existing: r.existing,
    };
  });
}

/**
 * The bytes of each receipt recorded, for a person to read and search (delivery_bodies), in the statement that
 * records them: one round trip still, and no change to the function's decisions. A duplicate_delivery keeps none
 * (a replayed signed request must write nothing new); a repeated handshake is stored nowhere, and is one.
 */
const keptBodies = sql`kept as (
        insert into delivery_bodies (delivery_id, body)
        select r.e ->> 'id', decode(r.e ->> 'body', 'base64')
        from input, recorded,
          json_array_elements(input.batch) with ordinality as r(e, n),
          json_array_elements(recorded.recorded) with ordinality as a(e, n)
        where a.n = r.n and r.e ->> 'body' is not null and a.e ->> 'decision' <> 'duplicate_delivery'
        on conflict do nothing
      )`;

const base64 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');

function failedWords(error: string) {
  const words = isOrderError(error) ? ORDER_FAILED : URL_FAILED;
  return { transform_error: error, last_error: words.lastError(error), decision: words.decision };
}
