import type { Identity } from '../../adapters/types.ts';
import type { SourceConfig } from '../config/schema.ts';
import { InputError } from '../errors.ts';
import { taskId } from '../ids.ts';
import { jsonPointer } from '../json-pointer.ts';
import type { NewTask } from '../store/atomic.ts';
import { TASK_STATES } from '../store/decisions.ts';

const PLACEHOLDER = /\{(eventId|deliveryId|topic|header:[^}]+|body:[^}]*)\}/g;

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
  return typeof found === 'string' || typeof found === 'number' ? String(found) : undefined;
}

/**
 * One task per action whose `topics` admit this delivery, each with an ID derived from source, task key
 * and action. Sorted by ID so that concurrent transactions lock task rows in the same order.
 */
export function planTasks(sourceId: string, source: SourceConfig, identity: Identity, headers: Headers): NewTask[] {
  const key = renderTaskKey(source.taskKey, identity, headers);
  const admitted = Object.entries(source.actions).filter(
    ([, config]) => !config.topics || (identity.topic !== null && config.topics.includes(identity.topic)),
  );
  const admittedIds = new Set(admitted.map(([action]) => action));
  const planned = admitted.map(([action, config]): NewTask => ({
    id: taskId(sourceId, key, action),
    action,
    state: config.approval === 'required' ? TASK_STATES.awaitingApproval : TASK_STATES.pending,
    // A step waits only for a sibling this delivery also feeds; waiting for one it never creates would be forever.
    afterTaskId: config.after !== undefined && admittedIds.has(config.after) ? taskId(sourceId, key, config.after) : null,
  }));
  return planned.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
