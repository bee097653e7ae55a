/**
 * Typeform (https://www.typeform.com/developers/webhooks/secure-your-webhooks/): `Typeform-Signature: sha256=<base64>`,
 * the HMAC-SHA256 of the raw body keyed by the webhook's secret. Typeform signs no timestamp, so there is no window to
 * check: a captured delivery verifies forever, and only its `event_id`, once known, keeps a replay from making work.
 *
 * `event_id` names the notification, and a retry sends the same signed body again: it is the delivery ID and the
 * event ID. The topic is `event_type` (`form_response`, `form_response_partial`), the time `form_response.submitted_at`.
 * `form_response.token` names the response rather than this notification; it stays in the body, for a `taskKey`.
 * Typeform waits 30 seconds (https://www.typeform.com/developers/webhooks/, "Timeout").
 */
import { randomUUID } from 'node:crypto';
import { SignatureError } from '../src/errors.ts';
import { eventInBody } from './identity.ts';
import { sender, type Sample, type SampleRequest, type SenderAdapter, type SenderSource } from './sender.ts';
import { anySignatureMatches, hmac, requireSignatureHeader } from './signature.ts';

const PREFIX = 'sha256=';
const signatureOf = (secret: string, body: string | Uint8Array) => hmac('sha256', secret, 'base64', body);

function adapter({ secrets }: SenderSource): SenderAdapter {
  return {
    ackTimeoutMs: 30_000,
    signatureHeaders: ['typeform-signature'],
    verify(request) {
      const signature = requireSignatureHeader(request.headers, 'Typeform-Signature');
      if (!signature.startsWith(PREFIX)) throw new SignatureError('Typeform-Signature must look like "sha256=<base64>"');
      const sign = (secret: string) => signatureOf(secret, request.body);
      if (!anySignatureMatches(secrets, sign, [signature.slice(PREFIX.length)], 'base64')) {
        throw new SignatureError("Typeform-Signature does not match the body under any configured secret (the webhook's secret)");
      }
      return eventInBody(request.body, { eventId: '/event_id', topic: '/event_type', occurredAt: '/form_response/submitted_at' });
    },
  };
}

function sample({ asked, eventId, secret }: SampleRequest): Sample {
  const body = JSON.stringify({
    event_id: eventId,
    event_type: asked.topic ?? 'form_response',
    form_response: { form_id: 'sample', token: randomUUID(), submitted_at: new Date().toISOString(), answers: [] },
  });
  return { body, headers: { 'content-type': 'application/json', 'typeform-signature': PREFIX + signatureOf(secret, body) } };
}

export const typeform = sender({ name: 'typeform', namedByEvent: true, adapter, sample });
