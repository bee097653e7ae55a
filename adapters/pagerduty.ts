/**
 * PagerDuty's v3 webhooks (PagerDuty developer docs, Webhooks: "Verifying Signatures", "Behavior", "Overview";
 * go-pagerduty's `webhookv3.VerifySignature`): `X-PagerDuty-Signature` lists comma-separated `v1=<hex>` entries,
 * each the hex HMAC-SHA256 of the raw body under one of the subscription's secrets, several while a secret is
 * rotated. No timestamp is signed, so there is no window; the event's ID is in the signed body, so a replay is
 * answered as a duplicate.
 *
 * Names: a payload carries one event. `event.id` names it, `event.event_type` is its topic (`incident.triggered`),
 * `event.occurred_at` when it happened. `X-Webhook-Id` is unique to a webhook and repeated on each of PagerDuty's
 * attempts ("At-Least-Once Delivery"), so it names the delivery; without it the event does. PagerDuty expects a
 * 2xx within 5 seconds, and retries a timeout, a 5xx or a 429 four times over about 20 minutes.
 */
import { SignatureError } from '../src/errors.ts';
import { eventInBody, requireId } from './identity.ts';
import { sender, type Sample, type SampleRequest, type SenderAdapter, type SenderSource } from './sender.ts';
import { anySignatureMatches, hmac, requireSignatureHeader } from './signature.ts';

const PREFIX = 'v1=';
const signatureOf = (secret: string, body: string | Uint8Array) => hmac('sha256', secret, 'hex', body);

function adapter({ secrets }: SenderSource): SenderAdapter {
  return {
    ackTimeoutMs: 5000,
    signatureHeaders: ['x-pagerduty-signature'],
    verify(request) {
      const signatures = requireSignatureHeader(request.headers, 'X-PagerDuty-Signature')
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry.startsWith(PREFIX))
        .map((entry) => entry.slice(PREFIX.length));
      if (signatures.length === 0) throw new SignatureError('X-PagerDuty-Signature has no v1=<signature> entry');
      const sign = (secret: string) => signatureOf(secret, request.body);
      if (!anySignatureMatches(secrets, sign, signatures, 'hex')) {
        throw new SignatureError("no v1 signature in X-PagerDuty-Signature matches the body under any configured secret (the webhook subscription's)");
      }
      return eventInBody(request.body, { eventId: '/event/id', topic: '/event/event_type', occurredAt: '/event/occurred_at' }, (_json, eventId) => {
        const webhookId = request.headers.get('x-webhook-id')?.trim() || null;
        return webhookId === null ? eventId : requireId(webhookId, 'X-Webhook-Id header');
      });
    },
  };
}

function sample({ asked, eventId, deliveryId, secret }: SampleRequest): Sample {
  const event = { id: eventId, event_type: asked.topic ?? 'incident.triggered', resource_type: 'incident', occurred_at: new Date().toISOString(), data: { id: 'PSAMPLE', type: 'incident', title: 'sample' } };
  const body = JSON.stringify({ event });
  return { body, headers: { 'content-type': 'application/json', 'x-pagerduty-signature': PREFIX + signatureOf(secret, body), 'x-webhook-id': deliveryId } };
}

export const pagerduty = sender({ name: 'pagerduty', adapter, sample });
