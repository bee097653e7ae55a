import type { ActionConfig, SourceConfig } from '../config/schema.ts';
import { HttpError } from '../errors.ts';
import { taskId } from '../ids.ts';
import type { NewTask } from '../store/atomic/record.ts';
import type { SkippedAction } from '../store/schema.ts';
import { matchFilter, type Filter } from '../shape/filter.ts';
import { placeInOrder } from '../shape/order.ts';
import { renderTaskKey } from '../shape/task-key.ts';
import type { DeliveryContent, Shaped, Transforms } from '../shape/transforms.ts';
import { freezeUrls, type UrlInput } from '../shape/url-template.ts';
import { TASK_STATES } from '../store/decisions.ts';

/** Why an action makes no task of this delivery (its topics, its filter), or null when it makes one. */
function skipOf(action: string, config: ActionConfig, { identity, headers }: DeliveryContent): SkippedAction | null {
  const { topic } = identity;
  if (config.topics && (topic === null || !config.topics.includes(topic))) {
    const taken = JSON.stringify(config.topics);
    return { action, reason: 'topic', detail: topic === null ? `the delivery has no topic, and the action takes ${taken}` : `topic: ${JSON.stringify(topic)} is not one of ${taken}` };
  }
  if (config.filter === undefined) return null;
  const detail = matchFilter(config.filter as Filter, { body: identity.json, headers, topic });
  return detail === null ? null : { action, reason: 'filtered', detail };
}

export interface Plan {
  /** Sorted by ID so that concurrent transactions lock task rows in the same order. */
  tasks: NewTask[];
  skipped: SkippedAction[];
}

/** Seconds a sender is told to wait when its source's transforms are too far behind to answer in time. */
const TRANSFORM_BUSY_RETRY_SECONDS = 5;

/**
 * One task per action whose `topics` and `filter` admit this delivery, each with an ID derived from source, task
 * key and action, and with its body shaped by the action's transform, if it has one: computed here, once, before
 * anyone approves it or it is sent. The actions that make no task are listed with why. A transform that cannot
 * start by `startBy` (a `performance.now()`: the source's own transforms are too far behind) makes the delivery a
 * 503 with Retry-After: nothing is recorded, and the sender's retry is planned again.
 */
export async function planTasks(
  sourceId: string,
  source: SourceConfig,
  content: DeliveryContent,
  requestHeaders: Headers,
  transforms: Transforms,
  startBy?: number,
): Promise<Plan> {
  const named = nameTasks(sourceId, source, content, requestHeaders, true);
  const planned = await Promise.all(
    named.tasks.map(async (task): Promise<NewTask> => {
      // Object.assign, not `{ ...content, taskId }`: on Node 20 a field after a spread costs ~1 µs, and this runs for
      // every task of every delivery planned, a storm's duplicates included (docs/performance-history.md).
      const shaped = await transforms.shape(sourceId, task.action, Object.assign({}, content, { taskId: task.id }), startBy);
      if (shaped !== null && 'late' in shaped) {
        throw new HttpError(503, 'transform_busy', `the transforms of source "${sourceId}" are too far behind to answer in time; retry later`, {
          'retry-after': String(TRANSFORM_BUSY_RETRY_SECONDS),
        });
      }
      if (shaped !== null && 'error' in shaped) return { ...task, state: TASK_STATES.failed, transformError: shaped.error };
      const config = source.actions[task.action]!;
      const urls = freezeUrls(config, urlInput(content, shaped));
      // Kept with the delivery's bytes, as a failed transform's task is: a retry computes body, URL and order again.
      if ('error' in urls) return { ...task, state: TASK_STATES.failed, requestError: urls.error };
      const order = config.order && placeInOrder(config.order, content.identity, requestHeaders);
      if (order && 'error' in order) return { ...task, state: TASK_STATES.failed, requestError: order.error };
      const ready: NewTask = Object.assign({}, task, shaped === null ? {} : { shaped }, urls);
      if (order) ready.order = order;
      return ready;
    }),
  );
  return { tasks: planned, skipped: named.skipped };
}

/** What a task's URL is made of: its delivery, and the body it sends (read only when the URL names a field of it). */
function urlInput({ identity, headers }: DeliveryContent, shaped: Shaped | null): UrlInput {
  const { eventId, deliveryId, topic, json } = identity;
  return { eventId, deliveryId, topic, headers, body: json, sent: () => (shaped === null ? json : JSON.parse(Buffer.from(shaped.body).toString('utf8'))) };
}

/**
 * The tasks a delivery names, without shaping their bodies: for one whose delivery or event key is already
 * recorded, which creates no task, and whose answer only lists the tasks it names that exist. Its content `filter`
 * is not run either (`filter` false): an action it would have filtered out names a task that does not exist, unless
 * another event of the same business task made it. Its `topics` are a string compared, and still decide.
 */
export function nameTasks(sourceId: string, source: SourceConfig, content: DeliveryContent, requestHeaders: Headers, filter = false): Plan {
  const { identity } = content;
  // Before the key: a notice lacks the business fields a taskKey names, and refusing it would fail the hook's test.
  if (identity.informational) return { tasks: [], skipped: [] };
  const key = renderTaskKey(source.taskKey, identity, requestHeaders);
  const skipped: SkippedAction[] = [];
  const admitted: [string, ActionConfig][] = [];
  for (const [action, config] of Object.entries(source.actions)) {
    const skip = skipOf(action, filter ? config : { ...config, filter: undefined }, content);
    if (skip) skipped.push(skip);
    else admitted.push([action, config]);
  }
  const admittedIds = new Set(admitted.map(([action]) => action));
  const tasks = admitted.map(
    ([action, config]): NewTask => ({
      id: taskId(sourceId, key, action),
      action,
      state: config.approval === 'required' ? TASK_STATES.awaitingApproval : TASK_STATES.pending,
      // A step waits only for a sibling this delivery also feeds; waiting for one it never creates would be forever.
      afterTaskId: config.after !== undefined && admittedIds.has(config.after) ? taskId(sourceId, key, config.after) : null,
    }),
  );
  return { tasks: tasks.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)), skipped };
}
