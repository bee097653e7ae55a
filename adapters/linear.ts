/**
 * Linear (https://linear.app/developers/webhooks, "Securing webhooks"; @linear/sdk's `LinearWebhookClient.verify`):
 * `Linear-Signature` is the hex HMAC-SHA256 of the raw body, keyed by the webhook's signing secret. The body's
 * `webhookTimestamp` (unix milliseconds, when the webhook was sent) must be within a minute of now, either way, as the
 * SDK checks. It lies inside the signed body, so unlike a header's it is read only once the signature matched.
 *
 * `Linear-Delivery` is the UUID of the delivery. Linear sends no event ID: a change is named by what the payload says
 * happened — its `type`, `action`, the entity's `data.id` and `createdAt` (when the action took place) — which a
 * retry repeats even though it is signed again at a new `webhookTimestamp`. A payload about no entity (`data.id`
 * absent, as in an OAuth app's revocation) is named by its delivery. The topic is `type.action` (`Issue.update`).
 * Linear waits 5 seconds for an answer, then retries after a minute, an hour and six hours.
 */
import { randomUUID } from 'node:crypto';
import { SignatureError } from '../src/errors.ts';
import { jsonPointer } from '../src/json-pointer.ts';
import { jsonKind, parseJson } from './body.ts';
import { isoDate, optionalString, requireId, stringId } from './identity.ts';
import { sender, type Sample, type SampleRequest, type SenderAdapter, type SenderSource } from './sender.ts';
import { anySignatureMatches, checkMillisecondsTimestamp, hmac, requireSignatureHeader } from './signature.ts';

const TOLERANCE_SECONDS = 60;
const signatureOf = (secret: string, body: string | Uint8Array) => hmac('sha256', secret, 'hex', body);

function adapter({ secrets }: SenderSource): SenderAdapter {
  return {
    ackTimeoutMs: 5000,
    signatureHeaders: ['linear-signature'],
    verify(request) {
      const { headers } = request;
      const signature = requireSignatureHeader(headers, 'Linear-Signature');
      const sign = (secret: string) => signatureOf(secret, request.body);
      if (!anySignatureMatches(secrets, sign, [signature], 'hex')) {
        throw new SignatureError("Linear-Signature does not match the body under any configured secret (the webhook's signing secret)");
      }
      const json = parseJson(request.body);
      const timestamp = jsonPointer(json, '/webhookTimestamp');
      if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) {
        throw new SignatureError(
          `the body's webhookTimestamp is ${timestamp === undefined ? 'missing' : jsonKind(timestamp)}: Linear signs one into every delivery, and without it a replay cannot be told apart`,
          'timestamp',
        );
      }
      checkMillisecondsTimestamp(timestamp, request.now, TOLERANCE_SECONDS, "the body's webhookTimestamp");
      const deliveryId = requireId(headers.get('linear-delivery'), 'Linear-Delivery header');
      const type = optionalString(jsonPointer(json, '/type'));
      const action = optionalString(jsonPointer(json, '/action'));
      const entity = jsonPointer(json, '/data/id');
      const eventId =
        entity === undefined
          ? deliveryId
          : requireId(
              [
                stringId(jsonPointer(json, '/type'), 'event type (body "type")'),
                stringId(jsonPointer(json, '/action'), 'action (body "action")'),
                stringId(entity, 'entity id (body "data.id")'),
                stringId(jsonPointer(json, '/createdAt'), 'time of the action (body "createdAt")'),
              ].join(':'),
              'event id (type:action:data.id:createdAt)',
            );
      return {
        deliveryId,
        eventId,
        topic: type !== null && action !== null ? `${type}.${action}` : (type ?? optionalString(headers.get('linear-event'))),
        occurredAt: isoDate(jsonPointer(json, '/createdAt')),
        json,
      };
    },
  };
}

/** A linear topic is `type.action` (`Issue.update`). */
function sample({ asked, deliveryId, secret }: SampleRequest): Sample {
  const topic = asked.topic ?? 'Issue.create';
  const dot = topic.lastIndexOf('.');
  const [type, action] = dot < 0 ? [topic, 'create'] : [topic.slice(0, dot), topic.slice(dot + 1)];
  const body = JSON.stringify({
    action,
    type,
    // Linear names a change by its entity and the time of the action: dated the start of today, the same
    // --event-id names the same change when sent again.
    createdAt: new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000).toISOString(),
    data: { id: asked.eventId ?? randomUUID(), title: 'sample' },
    webhookTimestamp: Date.now(),
  });
  return {
    body,
    headers: { 'content-type': 'application/json', 'linear-signature': signatureOf(secret, body), 'linear-delivery': deliveryId, 'linear-event': type },
  };
}

export const linear = sender({ name: 'linear', adapter, sample });
