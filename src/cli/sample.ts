import { randomUUID } from 'node:crypto';
import { senderOf } from '../../adapters/index.ts';
import { SampleError, type Sender, type SenderSource } from '../../adapters/sender.ts';
import type { SourceConfig } from '../config/schema.ts';

export { SampleError };

export interface SampleOptions {
  eventId?: string | undefined;
  deliveryId?: string | undefined;
  topic?: string | undefined;
  /** The path the sample is posted to (`/in/{source}`): Twilio and Square sign the URL, `publicUrl` and this path. */
  path?: string | undefined;
}

/** Why `--delivery-id` has nowhere to go in this source's deliveries, or null. */
function deliveryIdRefusal(sender: Sender<unknown>, settings: SenderSource<unknown>): string | null {
  if (sender.namedByEvent) return `a ${sender.name} delivery has no ID of its own apart from its event's (a retry repeats it)`;
  return sender.refusesDeliveryId?.(settings) ?? null;
}

/**
 * A correctly signed sample delivery for a configured source, so a newcomer can watch one be accepted and
 * then deduplicated without a real sender: made by the source's sender module, signed with the source's first
 * secret the way its sender signs.
 */
export function buildSample(source: SourceConfig, options: SampleOptions): { headers: Record<string, string>; body: string } {
  const { sender, settings } = senderOf(source);
  const refused = options.deliveryId === undefined ? null : deliveryIdRefusal(sender, settings);
  if (refused) throw new SampleError(`--delivery-id: ${refused}; use --event-id`);
  return sender.sample({
    source: settings,
    asked: options,
    eventId: options.eventId ?? String(Math.floor(Math.random() * 1e12)),
    deliveryId: options.deliveryId ?? randomUUID(),
    secret: source.secrets[0]!,
    now: Math.floor(Date.now() / 1000),
  });
}
