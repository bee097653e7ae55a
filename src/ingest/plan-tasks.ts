import type { Identity } from '../../adapters/types.ts';
import { jsonKind } from '../../adapters/verify.ts';
import { HEADER_NAME } from '../config/request.ts';
import type { ActionConfig, SourceConfig } from '../config/schema.ts';
import { HttpError, InputError } from '../errors.ts';
import { taskId } from '../ids.ts';
import { jsonPointer, JSON_POINTER_SYNTAX } from '../json-pointer.ts';
import type { NewTask } from '../store/atomic/record.ts';
import type { SkippedAction } from '../store/schema.ts';
import { matchFilter, type Filter } from '../shape/filter.ts';
import type { Transforms } from '../shape/transforms.ts';
import { TASK_STATES } from '../store/decisions.ts';

const PLACEHOLDER = /\{(eventId|deliveryId|topic|header:[^}]+|body:[^}]*)\}/g;

/**
 * What is wrong with a `taskKey` template, for the config check: text that is not a placeholder renders as
 * itself, so a typo (`{eventID}`) or a template without one gave every delivery the same task, every one after
 * the first answered `duplicate_task`.
 */
export function taskKeyProblems(template: string): string[] {
  const problems: string[] = [];
  for (const [, inside] of template.matchAll(/\{([^}]*)\}/g)) {
    const part = inside!;
    if (part.startsWith('header:')) {
      if (!HEADER_NAME.test(part.slice('header:'.length))) problems.push(`{${part}}: not a header name`);
    } else if (part.startsWith('body:')) {
      if (!JSON_POINTER_SYNTAX.test(part.slice('body:'.length))) problems.push(`{${part}}: not a JSON pointer like {body:/order/id}`);
    } else if (!['eventId', 'deliveryId', 'topic'].includes(part)) {
      problems.push(`{${part}}: not a placeholder; use {eventId}, {deliveryId}, {topic}, {header:NAME} or {body:/pointer}`);
    }
  }
  // Said only when no part was meant as one: a misspelt placeholder is already named above.
  if (problems.length === 0 && !new RegExp(PLACEHOLDER.source).test(template)) {
    problems.push('names no placeholder, so every delivery would be one task');
  }
  return problems;
}

/** Names the business task from a verified delivery with the source's `taskKey` template. */
export function renderTaskKey(template: string, identity: Identity, headers: Headers): string {
  return template.replace(PLACEHOLDER, (_, part: string) => {
    const value = placeholderValue(part, identity, headers);
    if (value === undefined || value === '') {
      throw new InputError('missing_identity', `the task key needs {${part}}, which this delivery does not have`);
    }
    return value;
  });
}

function placeholderValue(part: string, identity: Identity, headers: Headers): string | undefined {
  if (part === 'eventId') return identity.eventId;
  if (part === 'deliveryId') return identity.deliveryId;
  if (part === 'topic') return identity.topic ?? undefined;
  if (part.startsWith('header:')) return headers.get(part.slice('header:'.length)) ?? undefined;
  const found = jsonPointer(identity.json, part.slice('body:'.length));
  // Past 2^53 two different integers parse to one number: two business tasks would share one ID.
  if (typeof found === 'number' && Number.isInteger(found) && !Number.isSafeInteger(found)) {
    throw new InputError('invalid_identity', `the task key's {${part}} is a number JSON cannot carry exactly; send it as a string`);
  }
  if (typeof found === 'string' || typeof found === 'number') return String(found);
  // Said as what it is, as the adapters say an identity of another type: "does not have" hid a field that is there.
  if (found !== undefined) throw new InputError('invalid_identity', `the task key's {${part}} is ${jsonKind(found)}, not a string or a number`);
  return undefined;
}

/** What an action's filter and transform read of a delivery: its body, its headers as recorded, its identities. */
export interface DeliveryContent {
  identity: Identity;
  /** The headers as stored with the receipt: signatures and credentials redacted, names lower-case. */
  headers: Record<string, string>;
}

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
      const shaped = await transforms.shape(sourceId, task.action, { ...content, taskId: task.id }, startBy);
      if (shaped === null) return task;
      if ('late' in shaped) {
        throw new HttpError(503, 'transform_busy', `the transforms of source "${sourceId}" are too far behind to answer in time; retry later`, {
          'retry-after': String(TRANSFORM_BUSY_RETRY_SECONDS),
        });
      }
      return 'error' in shaped ? { ...task, state: TASK_STATES.failed, transformError: shaped.error } : { ...task, shaped };
    }),
  );
  return { tasks: planned, skipped: named.skipped };
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
