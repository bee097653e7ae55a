import type { DeliveryRow, DeliveryView, RelatedTask } from '../store/queries/deliveries.ts';
import { TASK_STATES } from '../store/decisions.ts';
import { decisionsFor, type TaskDecision } from '../store/operator-rules.ts';
import type { TaskView } from '../store/task-view.ts';
import { isOrderError } from '../shape/order.ts';
import { isUrlError } from '../shape/url-template.ts';
import type { Held } from './destinations.ts';

/**
 * Why a held task waits, as a list shows it: the paused origin, whether the task would send there or only ask its
 * lookup there, and the pause's reason.
 */
export function heldWords(held: { origin: string; use: 'send' | 'lookup'; reason: string | null }): string {
  const what = held.use === 'lookup' ? `lookups at ${held.origin} are paused` : `${held.origin} is paused`;
  return `held: ${what}${held.reason ? ` (${held.reason})` : ''}`;
}

/** heldWords of a paused destination holding a task, with the pause's reason. */
export const heldWordsOf = (held: Held) => heldWords({ origin: held.destination.origin, use: held.use, reason: held.destination.pausedReason });

/** The actions that use an origin: those that send to it, then those whose lookups it answers, marked so. */
export function originUses(d: { actions: string[]; lookups?: string[] | undefined }): string {
  return [...d.actions, ...(d.lookups ?? []).map((route) => `${route} (lookup)`)].join(', ');
}

const time = (at: Date) => at.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');

function taskInWords(task: RelatedTask): string {
  const outcome =
    task.state === TASK_STATES.succeeded
      ? `succeeded${task.resultReference ? `, reference ${task.resultReference}` : ''}`
      : task.lastError
        ? `is ${task.state} (${task.lastError})`
        : `is ${task.state}`;
  return `task ${task.id} for ${task.action} ${outcome}`;
}

const receipt = (row: DeliveryRow) => `delivery ${row.id} (${row.source} delivery ID ${row.deliveryId}) at ${time(row.receivedAt)}`;

const SKIP_WORDS: Record<DeliveryRow['skippedReasons'][number], string> = { filtered: 'filtered', topic: 'off-topic' };

/**
 * What a receipt made, as a list shows it: `2 tasks`, or for an accepted one that made none, why — `no task:
 * filtered` (an action's filter), `no task: off-topic` (no action takes its topic). Null for a duplicate: its tasks
 * are its origin's.
 */
export function tasksMadeWords(row: Pick<DeliveryRow, 'decision' | 'taskCount' | 'skippedReasons'>): string | null {
  if (row.taskCount > 0) return `${row.taskCount} task${row.taskCount === 1 ? '' : 's'}`;
  if (row.decision !== 'accepted') return null;
  // Recorded before skipped actions were kept, or a sender's notice that names no work: no action took it.
  if (row.skippedReasons.length === 0) return 'no task: no action takes it';
  return `no task: ${row.skippedReasons.map((reason) => SKIP_WORDS[reason]).join(', ')}`;
}

/** The decision on a receipt in words: what it matched, and where the work it is about stands now. */
export function explainDelivery(view: DeliveryView): string {
  const tasks = view.tasks.length > 0 ? `; ${view.tasks.map(taskInWords).join('; ')}` : '';
  const first = view.matched;
  switch (view.decision) {
    case 'accepted': {
      const skipped = view.skipped.map((s) => `no task for ${s.action} (${s.reason === 'topic' ? 'topics' : 'filter'}: ${s.detail})`).join('; ');
      if (view.tasks.length > 0) return `accepted — event ${view.eventId} was new, and this delivery created its tasks${tasks}${skipped ? `; ${skipped}` : ''}`;
      // Recorded before skipped actions were kept, a delivery that made no task says only what its topic was.
      return skipped
        ? `accepted — event ${view.eventId} was new, and no action made a task of it: ${skipped}`
        : `accepted — event ${view.eventId} was new; no configured action takes topic ${view.topic ?? '(none)'}, so no task was created`;
    }
    case 'duplicate_delivery':
      return `duplicate_delivery — the sender retried: delivery ID ${view.deliveryId} first arrived in ${first ? receipt(first) : 'an earlier delivery'}; nothing new was created${tasks}`;
    case 'duplicate_event':
      return `duplicate_event — event ${view.eventId} first arrived in ${first ? receipt(first) : 'an earlier delivery'} (another subscription, or a resend under a new delivery ID); nothing new was created${tasks}`;
    case 'duplicate_task':
      return `duplicate_task — event ${view.eventId} was new, but every task it names already existed, created by ${first ? `${receipt(first)} for event ${first.eventId}` : 'an earlier delivery'} (the source's taskKey names them alike)${tasks}`;
    default:
      return `${view.decision}${tasks}`;
  }
}

export interface TaskExplanation {
  /** Where the task stands, in one sentence. */
  summary: string;
  /** What a person must decide now, or null when nothing waits for one. */
  nextDecision: string | null;
  /** The decisions allowed from its state. */
  allowedActions: TaskDecision[];
}

/**
 * `destination`: how the task's destination stands, for a task still to be sent. A paused one holds the task
 * until a person resumes it, though the task itself is only `pending`.
 */
/** What a step waiting for its predecessor (`after`) asks of a person, by the predecessor's state; null: nothing. */
function waiting(before: { id: string; state: string }): string | null {
  if (before.state === TASK_STATES.cancelled) {
    return `It is sent only once ${before.id} succeeds, and that was cancelled: ${strandedWords(before).todo}.`;
  }
  if (before.state === TASK_STATES.pending || before.state === TASK_STATES.inProgress) return null;
  return `It is sent once ${before.id} succeeds, which is ${before.state}: settle that one first (oncehook explain ${before.id}), or cancel this step, or resolve it if it was done by hand.`;
}

/** Why the attention queue lists a step that is only `pending` (the one before it will not succeed), and what to do. */
export function strandedWords(predecessor: { id: string; state: string }): { short: string; todo: string } {
  return predecessor.state === TASK_STATES.cancelled
    ? { short: 'stranded: predecessor cancelled', todo: 'cancel this step too, or resolve it if it was done by hand' }
    : {
        short: 'stranded: predecessor done by a replay',
        todo: `resolve ${predecessor.id} with its successful replay's reference to let this step go, or cancel this step`,
      };
}

/** A ledger row as people read it: a lookup carries the number of the send it asks about. */
export const ledgerName = (row: { kind: string; number: number }) =>
  row.kind === 'lookup' ? `lookup of send #${row.number}` : row.kind === 'transform' ? 'transform' : `${row.kind} #${row.number}`;

/** Tasks the running config has no action for wait in these states, claimed by no worker, until a person decides. */
const UNCLAIMED_WITHOUT_ACTION: readonly string[] = [TASK_STATES.pending, TASK_STATES.outcomeUnknown];

/**
 * `configured`: whether the running config still has the task's action. A reload that removed it leaves its unsent
 * tasks where they are, for a person: nothing is dropped.
 */
export function explainTask(
  task: TaskView,
  standing: Held | null = null,
  predecessor: { id: string; state: string } | null = null,
  configured = true,
): TaskExplanation {
  const last = task.ledger[task.ledger.length - 1];
  const lastWords = last
    ? `; last ${ledgerName(last)}: ${last.class ?? 'in flight'}${last.responseStatus ? ` (HTTP ${last.responseStatus})` : ''}`
    : '';
  const tries = `${task.attempts} send${task.attempts === 1 ? '' : 's'}${task.lookups > 0 ? `, ${task.lookups} lookup${task.lookups === 1 ? '' : 's'}` : ''}`;
  const why = task.lastError ? ` — ${task.lastError}` : '';
  const by = task.owner ? ` ${task.owner} has it.` : ' Nobody has taken it yet.';
  const next: Record<string, string | null> = {
    [TASK_STATES.awaitingApproval]: `Approve the first send of the stored bytes (sha256 ${task.bodySha256.slice(0, 12)}…), or cancel it.${by}`,
    [TASK_STATES.needsReview]: `Find out whether ${task.action} already made the effect. If it did, resolve with its reference; if it did not, retry; if it must not happen, cancel.${by}`,
    [TASK_STATES.outcomeUnknown]: `oncehook is reconciling it (next look ${time(task.nextAttemptAt)}); if you already know the answer, resolve, retry or cancel.${by}`,
    // Retention purges only finished tasks, so of the states that wait for a person only failed can lose its body.
    [TASK_STATES.failed]: task.bodyPurged
      ? `It was not done${why}. Its body was purged by retention, so it cannot be sent again: resolve if it was done by hand, or cancel.${by}`
      : task.transformError && (isUrlError(task.transformError) || isOrderError(task.transformError))
        ? `Nothing was sent: ${task.transformError}. Fix the action's ${isUrlError(task.transformError) ? 'url' : 'order'} in the config, restart, then retry: the retry computes it again. Or resolve if it was done by hand, or cancel.${by}`
        : task.transformError
        ? `Nothing was sent: the action's transform failed on this delivery (${task.transformError}). Fix the transform in the config, restart, then retry: the retry computes it again. Or resolve if it was done by hand, or cancel.${by}`
        : `It was not done${why}. Fix the cause and retry; resolve if it was done by hand; or cancel.${by}`,
  };
  // A replay that succeeded made the effect: a retry of this task, under its own key, would make it again. A failed
  // one is out of the attention queue then; resolving it only records that (and lets a step waiting for it go).
  const replayed = task.succeededReplay;
  if (replayed && (task.state === TASK_STATES.failed || task.state === TASK_STATES.needsReview)) {
    const then =
      task.state === TASK_STATES.failed
        ? 'the attention queue no longer lists this one: resolve it with that replay\'s reference to record so (a step waiting for it then goes), or leave it'
        : 'resolve this one with that replay\'s reference, or cancel it';
    next[task.state] = `Its replay ${replayed} succeeded, so the effect exists: ${then}. A retry would send it again under this task's own key — a second effect.${by}`;
  }
  const destination = standing?.destination ?? null;
  const paused = standing?.destination.status === 'paused' ? { ...standing.destination, use: standing.use } : null;
  const held = paused
    ? `; ${heldWords({ origin: paused.origin, use: paused.use, reason: null })}`
    : destination?.status === 'cooling' && destination.cooldownUntil
      ? `; ${destination.origin} is cooling down until ${time(destination.cooldownUntil)}`
      : '';
  const since = paused ? `(since ${paused.pausedAt ? time(paused.pausedAt) : 'a refusal'}: ${paused.pausedReason ?? 'refused'})` : '';
  const resume = !paused
    ? null
    : paused.use === 'lookup'
      ? `No lookup is asked at ${paused.origin} while it is paused ${since}. Fix the cause, then resume the destination (oncehook resume ${paused.origin}); this task's lookup goes then. If you already know the answer, resolve, retry or cancel.`
      : `Nothing is sent to ${paused.origin} while it is paused ${since}. Fix the cause, then resume the destination (oncehook resume ${paused.origin}); this task goes then.`;
  const orphaned = !configured && UNCLAIMED_WITHOUT_ACTION.includes(task.state);
  const unconfigured = orphaned
    ? `Held: the running config has no action ${task.action} on ${task.source}, so no worker takes it. Put the action back and reload the config (oncehook reload): it goes then. Or cancel it, or resolve it if it was done by hand.`
    : null;
  return {
    summary: `${task.state} — ${task.source}/${task.action} for event ${task.eventId}, ${tries}${lastWords}${task.resultReference ? `; reference ${task.resultReference}` : ''}${orphaned ? '; held: its action is not in the running config' : ''}${held}${predecessor ? `; waits for ${predecessor.id} (${predecessor.state})` : ''}${orderWords(task)}${task.bodyPurged ? '; body purged by retention' : ''}`,
    nextDecision: unconfigured ?? resume ?? (predecessor ? waiting(predecessor) : null) ?? heldByKey(task) ?? next[task.state] ?? null,
    allowedActions: decisionsFor(task.state, task.bodyPurged, task.transformError !== null),
  };
}

/** The dashboard's and the CLI's words for instances that run different configs. */
export function versionsWords(versions: readonly { configVersion: string; instances: number }[]): string {
  const each = versions.map(({ configVersion, instances }) => `${instances} on ${configVersion}`).join(', ');
  return `The instances run different configs (${each}): reload the ones behind (oncehook reload, or SIGHUP), or finish the rollout.`;
}

/** Where a task of an ordered action stands in its key: held behind another, or overtaken by a newer one. */
function orderWords({ order }: Pick<TaskView, 'order'>): string {
  if (order?.supersededBy) return `; superseded by ${order.supersededBy}, a newer task of ${order.key}: nothing was sent`;
  if (order?.heldBy) return `; held behind ${order.heldBy.id} (${order.heldBy.state}), which goes first for ${order.key}`;
  return '';
}

/** What a task held in its key's order asks of a person: nothing while the one before it is on its way. */
function heldByKey({ order }: Pick<TaskView, 'order'>): string | null {
  const holder = order?.heldBy;
  if (!holder || holder.state === TASK_STATES.pending || holder.state === TASK_STATES.inProgress) return null;
  return `It goes once ${holder.id} is resolved, which is ${holder.state}: settle that one (oncehook explain ${holder.id}); cancelling or resolving it lets this one go.`;
}
