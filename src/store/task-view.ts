import { asc, eq, getTableColumns, sql } from 'drizzle-orm';
import type { Db } from './connect.ts';
import type { OrderMode } from '../shape/order.ts';
import { UNRESOLVED } from './decisions.ts';
import { inList } from './queries/task-filter.ts';
import { attempts, operatorActions, tasks } from './schema.ts';

/**
 * A task as a person inspects it: its row (without the body bytes), its run ledger, every operator action
 * and the replays made of it — all as of one moment. Read in separate snapshots, a finish committing between
 * them showed a task still in progress beside the attempt that had just succeeded.
 */
export function taskView(db: Db, id: string) {
  return db.transaction((tx) => readTaskView(tx, id), { isolationLevel: 'repeatable read', accessMode: 'read only' });
}

/** One statement after another on the transaction's connection, which is what keeps them in its snapshot. */
async function readTaskView(db: Db, id: string) {
  const [task] = await db
    .select({
      id: tasks.id,
      source: tasks.source,
      action: tasks.action,
      eventId: tasks.eventId,
      topic: tasks.topic,
      deliveryId: tasks.deliveryId,
      state: tasks.state,
      contentType: tasks.contentType,
      bodySha256: tasks.bodySha256,
      /** Retention purged the stored bytes: the task can no longer be sent. */
      bodyPurged: sql<boolean>`${tasks.body} is null`,
      bodyBytes: sql<number | null>`octet_length(${tasks.body})`,
      /** The start of the stored bytes, one past what is shown: enough to tell that more was left out. */
      bodyStart: sql<Uint8Array | null>`substring(${tasks.body} from 1 for ${BODY_SHOWN + 1})`,
      transformError: tasks.transformError,
      requestUrl: tasks.requestUrl,
      lookupUrl: tasks.lookupUrl,
      afterTaskId: tasks.afterTaskId,
      replayOf: tasks.replayOf,
      /** A replay down the task's chain (of it, or of a replay of it) that succeeded: the effect exists. */
      succeededReplay: tasks.effectReplay,
      attempts: tasks.attempts,
      lookups: tasks.lookups,
      nextAttemptAt: tasks.nextAttemptAt,
      firstAttemptAt: tasks.firstAttemptAt,
      leaseOwner: tasks.leaseOwner,
      leaseExpiresAt: tasks.leaseExpiresAt,
      claim: tasks.claims,
      claimedAt: tasks.claimedAt,
      claimKind: tasks.claimKind,
      lastError: tasks.lastError,
      resultReference: tasks.resultReference,
      owner: tasks.owner,
      orderKey: tasks.orderKey,
      orderMode: tasks.orderMode,
      orderBy: tasks.orderBy,
      held: tasks.held,
      supersededBy: tasks.supersededBy,
      /** The task its key waits for while this one is held: the key's one unheld unresolved task. */
      // Qualified by hand: drizzle writes a column of the selected table without its table, which here would be h's.
      holder: sql<{ id: string; state: string } | null>`(select json_build_object('id', h.id, 'state', h.state) from tasks h
        where tasks.held and h.source = tasks.source and h.action = tasks.action and h.order_key = tasks.order_key
          and not h.held and h.state in ${inList(UNRESOLVED)} limit 1)`,
      createdAt: tasks.createdAt,
      updatedAt: tasks.updatedAt,
    })
    .from(tasks)
    .where(eq(tasks.id, id));
  if (!task) return null;
  const { bodyStart, requestUrl, lookupUrl, orderKey, orderMode, orderBy, held, supersededBy, holder, claim, claimedAt, claimKind, ...row } = task;
  const order =
    orderKey === null
      ? null
      : { key: orderKey, mode: orderMode as OrderMode, position: orderBy, heldBy: held ? holder : null, supersededBy };
  const written: LedgerRow[] = await db.select(LEDGER_COLUMNS).from(attempts).where(eq(attempts.taskId, id)).orderBy(asc(attempts.id));
  // The attempt in flight has no row until it ends: the claim the task notes shows it, last.
  const ledger = task.state === 'in_progress' && claimKind !== null && claimedAt !== null
    ? [...written, inFlight(id, { claim, number: task.attempts, kind: claimKind, startedAt: claimedAt })]
    : written;
  const actions = await db.select().from(operatorActions).where(eq(operatorActions.taskId, id)).orderBy(asc(operatorActions.id));
  const replays = await db
    .select({ id: tasks.id, state: tasks.state, createdAt: tasks.createdAt })
    .from(tasks)
    .where(eq(tasks.replayOf, id))
    // The last is the latest replay, as replayTask's `after` check reads it: both break a tie by ID.
    .orderBy(asc(tasks.createdAt), asc(tasks.id));
  return { ...row, order, body: shownBody(bodyStart), ledger, operatorActions: actions, replays, frozenUrls: { requestUrl, lookupUrl } };
}

/** A ledger row's columns as a person reads them: its `txid` is the tally's bookkeeping (attempt-tally.ts). */
const { txid: _tally, ...ledgerColumns } = getTableColumns(attempts);
export const LEDGER_COLUMNS = ledgerColumns;

/** A row of the run ledger; the attempt still in flight has no ID. */
export type LedgerRow = Omit<typeof attempts.$inferSelect, 'id' | 'txid'> & { id: number | null };

function inFlight(taskId: string, claim: { claim: number; number: number; kind: string; startedAt: Date }): LedgerRow {
  const none = { finishedAt: null, requestSha256: null, responseStatus: null, durationMs: null, class: null, error: null };
  return { id: null, taskId, ...claim, ...none, reference: null, decision: null };
}

/** How much of a task's stored bytes its view shows: a shaped API request whole, a large delivery's start. */
const BODY_SHOWN = 64 * 1024;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The bytes every attempt sends (those a person approves), as text; null when they are not text. Cut at a
 * character boundary, so a cut never shows a broken character.
 */
function shownBody(start: Uint8Array | null): { text: string; truncated: boolean } | null {
  if (start === null) return null;
  const bytes = new Uint8Array(start);
  const truncated = bytes.byteLength > BODY_SHOWN;
  let end = Math.min(bytes.byteLength, BODY_SHOWN);
  // Back to the first byte of the character the cut lands in (continuation bytes are 10xxxxxx).
  if (truncated) while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  try {
    return { text: utf8.decode(bytes.subarray(0, end)), truncated };
  } catch {
    return null;
  }
}

export type TaskView = NonNullable<Awaited<ReturnType<typeof taskView>>>;

/**
 * A task's view as it is answered: its frozen URLs only as its request shows them (task-request.ts), since a URL's
 * query may hold a credential of the config.
 */
export type ShownTaskView = Omit<TaskView, 'frozenUrls'>;

/** The step a pending task waits for (its action's `after`), while that one has not succeeded: what holds it. */
export async function predecessorOf(db: Db, task: { state: string; afterTaskId: string | null }): Promise<{ id: string; state: string } | null> {
  if (task.state !== 'pending' || task.afterTaskId === null) return null;
  const [before] = await db.select({ id: tasks.id, state: tasks.state }).from(tasks).where(eq(tasks.id, task.afterTaskId));
  return before && before.state !== 'succeeded' ? before : null;
}
