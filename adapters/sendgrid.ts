/**
 * SendGrid's signed Event Webhook (https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook-security-features):
 * `X-Twilio-Email-Event-Webhook-Signature` is a base64 ECDSA (P-256, SHA-256, DER) signature of
 * `<X-Twilio-Email-Event-Webhook-Timestamp><raw body>`, checked with the verification key the account shows — which
 * is what `secrets` holds (base64 DER, "MFkw…"), not a shared secret. SendGrid's own verifier (`@sendgrid/eventwebhook`)
 * checks no timestamp window, and SendGrid retries a failed POST for up to 24 hours with the same signature, so none
 * is enforced here. A delivery carries a list of events: each is one event, named by its `sg_event_id`.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { InputError, SignatureError } from '../src/errors.ts';
import { jsonPointer } from '../src/json-pointer.ts';
import { jsonKind, parseJson, withinBatchLimit } from './body.ts';
import { optionalString, stringId, unixSecondsDate } from './identity.ts';
import { SampleError, sender, type Sample, type SenderAdapter, type SenderSource } from './sender.ts';
import { requireSignatureHeader } from './signature.ts';
import type { EventItem } from './types.ts';

/** A verification key as SendGrid shows it: base64 of a DER public key; undefined when it is not one. */
function sendgridKey(secret: string): KeyObject {
  const pem = secret.includes('BEGIN PUBLIC KEY') ? secret : undefined;
  return pem ? createPublicKey(pem) : createPublicKey({ key: Buffer.from(secret, 'base64'), format: 'der', type: 'spki' });
}

function adapter({ secrets }: SenderSource): SenderAdapter {
  const keys = secrets.map(sendgridKey);
  return {
    // SendGrid's docs ask for a 2xx within 3 seconds.
    ackTimeoutMs: 3000,
    signatureHeaders: ['x-twilio-email-event-webhook-signature'],
    verify(request) {
      const signature = requireSignatureHeader(request.headers, 'X-Twilio-Email-Event-Webhook-Signature');
      const timestamp = requireSignatureHeader(request.headers, 'X-Twilio-Email-Event-Webhook-Timestamp');
      const signed = Buffer.concat([Buffer.from(timestamp), request.body]);
      const decoded = Buffer.from(signature, 'base64');
      if (!keys.some((key) => verify('sha256', signed, { key, dsaEncoding: 'der' }, decoded))) {
        throw new SignatureError('X-Twilio-Email-Event-Webhook-Signature does not verify under any configured verification key');
      }
      const json = parseJson(request.body);
      if (!Array.isArray(json) || json.length === 0) {
        throw new InputError('malformed_body', `the body is ${Array.isArray(json) ? 'an empty list' : jsonKind(json)}, not SendGrid's list of events`);
      }
      const items = withinBatchLimit(json, request).map((event, i): EventItem => {
        const eventId = stringId(jsonPointer(event, '/sg_event_id'), `event ${i}'s id (sg_event_id)`);
        return {
          deliveryId: eventId,
          eventId,
          topic: optionalString(jsonPointer(event, '/event')),
          occurredAt: unixSecondsDate(jsonPointer(event, '/timestamp')),
          json: event,
          body: Buffer.from(JSON.stringify(event)),
        };
      });
      // The delivery as a whole has no ID of its own: it is named by its first event.
      return { deliveryId: items[0]!.deliveryId, eventId: items[0]!.eventId, topic: null, occurredAt: null, json, items };
    },
  };
}

function sample(): Sample {
  throw new SampleError("a sendgrid source verifies with SendGrid's public key, so only SendGrid can sign for it: use the Event Webhook settings' \"Test Your Integration\"");
}

export const sendgrid = sender({
  name: 'sendgrid',
  secretKey: { decode: sendgridKey, problem: 'a sendgrid secret is the Event Webhook\'s verification key: base64 of a public key ("MFkw…")' },
  namedByEvent: true,
  adapter,
  sample,
});
