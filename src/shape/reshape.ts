import { formJson, parseForm } from '../../adapters/form.ts';
import { parseJson } from '../../adapters/verify.ts';
import type { ShapeSource } from '../store/atomic/operator.ts';
import type { Shaped, Transforms } from './transforms.ts';

/** A delivery's body as its adapter read it for the transform: JSON, a form read as JSON, else nothing. */
function deliveryJson(source: ShapeSource): unknown {
  if (/^\s*application\/x-www-form-urlencoded\b/i.test(source.contentType ?? '')) return formJson(parseForm(source.body));
  try {
    return parseJson(source.body);
  } catch {
    return undefined;
  }
}

/**
 * A task's body computed again from its delivery, for a task whose ID is `taskId` (a retry's own, a replay's new one),
 * with the action as the config has it now: what it made, why it made nothing, or null when the action has no
 * transform now.
 */
export function reshape(transforms: Transforms, source: ShapeSource, taskId: string): Promise<Shaped | { error: string } | null> {
  const identity = { deliveryId: source.deliveryId, eventId: source.eventId, topic: source.topic, occurredAt: null, json: deliveryJson(source) };
  return transforms.shape(source.source, source.action, { identity, headers: source.headers, taskId });
}
