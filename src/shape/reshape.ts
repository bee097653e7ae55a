import { parseJson } from '../../adapters/body.ts';
import { formJson, parseForm } from '../../adapters/form.ts';
import type { Shaped, Transforms } from './transforms.ts';
import { freezeUrls, type FrozenUrls } from './url-template.ts';

/** A task's delivery as recorded: what its transform is computed again from. */
export interface RecordedDelivery {
  source: string;
  action: string;
  eventId: string;
  topic: string | null;
  /** The sender's delivery ID, and the receipt's headers and content type as recorded. */
  deliveryId: string;
  headers: Record<string, string>;
  contentType: string | null;
  /** The delivery's bytes. */
  body: Uint8Array;
}

/** A delivery's body as its adapter read it for the transform: JSON, a form read as JSON, else nothing. */
export function deliveryJson(source: Pick<RecordedDelivery, 'contentType' | 'body'>): unknown {
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
export function reshape(transforms: Transforms, source: RecordedDelivery, taskId: string): Promise<Shaped | { error: string } | null> {
  const identity = { deliveryId: source.deliveryId, eventId: source.eventId, topic: source.topic, occurredAt: null, json: deliveryJson(source) };
  return transforms.shape(source.source, source.action, { identity, headers: source.headers, taskId });
}

/** A task's URLs made again from its delivery, with the action as the config has it now, and the body it now sends. */
export function refreezeUrls(
  action: { url: string; lookup?: string | { url: string } | undefined },
  source: RecordedDelivery,
  shaped: Shaped | null,
): FrozenUrls | { error: string } {
  const json = deliveryJson(source);
  return freezeUrls(action, {
    eventId: source.eventId,
    deliveryId: source.deliveryId,
    topic: source.topic,
    headers: source.headers,
    body: json,
    sent: () => (shaped === null ? json : JSON.parse(Buffer.from(shaped.body).toString('utf8'))),
  });
}
