/**
 * Paddle Billing (https://developer.paddle.com/webhooks/about/signature-verification, and
 * `@paddle/paddle-node-sdk`'s WebhooksValidator): `Paddle-Signature: ts=<unix>;h1=<hex>` is HMAC-SHA256, keyed
 * by the notification destination's secret key, of `<ts>:<raw body>`. Paddle's SDKs refuse a `ts` more than five
 * seconds old (MAX_VALID_TIME_DIFFERENCE = 5) and its docs ask manual checks to do the same; oncehook keeps five
 * seconds, in both directions, so the gateway's clock must be kept in time (NTP). Every `h1` is tried: more than
 * one is sent while a secret is rotated.
 *
 * One event (`event_id`) makes one notification per destination, each with its own `notification_id`, which
 * Paddle keeps when it retries (https://developer.paddle.com/webhooks/about/how-webhooks-work): the delivery is the
 * notification and the event is the event, as Shopify's webhook and event IDs are. `event_type` is the topic and
 * `occurred_at` the time. Paddle waits five seconds (https://developer.paddle.com/webhooks/about/respond-to-webhooks).
 */
import { SignatureError } from '../src/errors.ts';
import { jsonPointer } from '../src/json-pointer.ts';
import { eventInBody, stringId } from './identity.ts';
import { sender, type Sample, type SampleRequest, type SenderAdapter, type SenderSource } from './sender.ts';
import { anySignatureMatches, checkTimestamp, hmac, requireSignatureHeader } from './signature.ts';

const TOLERANCE_SECONDS = 5;

/** An h1 signature: hex HMAC-SHA256 of `${ts}:${body}`. */
const h1 = (secret: string, timestamp: string | number, body: string | Uint8Array) => hmac('sha256', secret, 'hex', `${timestamp}:`, body);

function parseSignatureHeader(value: string): { timestamp: string; signatures: string[] } {
  let timestamp: string | undefined;
  const signatures: string[] = [];
  for (const part of value.split(';')) {
    const separator = part.indexOf('=');
    if (separator < 0) continue;
    const key = part.slice(0, separator).trim();
    const val = part.slice(separator + 1).trim();
    if (key === 'ts') timestamp ??= val;
    if (key === 'h1' && val !== '') signatures.push(val);
  }
  if (timestamp === undefined) throw new SignatureError('Paddle-Signature has no ts= timestamp', 'timestamp');
  if (signatures.length === 0) throw new SignatureError('Paddle-Signature has no h1= signature');
  return { timestamp, signatures };
}

function adapter({ secrets }: SenderSource): SenderAdapter {
  return {
    ackTimeoutMs: 5000,
    signatureHeaders: ['paddle-signature'],
    verify(request) {
      const { timestamp, signatures } = parseSignatureHeader(requireSignatureHeader(request.headers, 'Paddle-Signature'));
      checkTimestamp(timestamp, request.now, TOLERANCE_SECONDS, 'the Paddle-Signature ts');
      const sign = (secret: string) => h1(secret, timestamp, request.body);
      if (!anySignatureMatches(secrets, sign, signatures, 'hex')) {
        throw new SignatureError("no h1 in Paddle-Signature matches the body under any configured secret key (the notification destination's, pdl_ntfset_…)");
      }
      return eventInBody(request.body, { eventId: '/event_id', topic: '/event_type', occurredAt: '/occurred_at' }, (json, eventId) => {
        const notification = jsonPointer(json, '/notification_id');
        // A body without a notification_id (one posted by hand) is its event's only delivery.
        return notification === undefined ? eventId : stringId(notification, 'delivery id (body "notification_id")');
      });
    },
  };
}

function sample({ asked, eventId, deliveryId, secret, now }: SampleRequest): Sample {
  const id = eventId.startsWith('evt_') ? eventId : `evt_${eventId}`;
  const body = JSON.stringify({ event_id: id, event_type: asked.topic ?? 'transaction.completed', occurred_at: new Date().toISOString(), notification_id: `ntf_${deliveryId}`, data: {} });
  return { body, headers: { 'content-type': 'application/json', 'paddle-signature': `ts=${now};h1=${h1(secret, now, body)}` } };
}

export const paddle = sender({ name: 'paddle', adapter, sample });
