/**
 * Square (https://developer.squareup.com/docs/webhooks/step3validate, and the `square` SDK's
 * WebhooksHelper.verifySignature): `x-square-hmacsha256-signature` is base64 HMAC-SHA256, keyed by the
 * subscription's signature key, of the notification URL followed by the raw body. There is no timestamp. The URL
 * is the source's `publicUrl` origin with the path and query called. The older `x-square-signature` (HMAC-SHA1)
 * is not checked.
 *
 * Square resends a notification it saw no 2xx for, with the same `event_id` ("Webhooks can be sent more than
 * once": https://developer.squareup.com/docs/webhooks-overview), and marks the retry with `square-retry-number`,
 * kept with the delivery's headers. So `event_id` names the delivery and the event, as Stripe's id does; `type` is
 * the topic and `created_at` the time. Square waits 10 seconds
 * (https://developer.squareup.com/docs/webhooks/troubleshooting).
 */
import { SignatureError } from '../src/errors.ts';
import { eventInBody } from './identity.ts';
import { required, sender, type Sample, type SampleRequest, type SenderAdapter, type SenderSource } from './sender.ts';
import { hmac, requireSignatureHeader, safeEqual } from './signature.ts';
import { calledUrls, sampleUrl } from './signed-url.ts';

// Square signs the URL it calls: without the public one, no delivery could ever verify.
const NEEDS_URL = 'a square source needs "publicUrl", the origin square calls (e.g. "https://hooks.example.com"): it signs the URL it calls';

/** Base64 HMAC-SHA256 of the notification URL and the body, under the subscription's signature key. */
const signatureOf = (key: string, url: string, body: string | Uint8Array) => hmac('sha256', key, 'base64', url, body);

function adapter(source: SenderSource): SenderAdapter {
  const { secrets } = source;
  const publicUrl = required(source.publicUrl, 'publicUrl', NEEDS_URL);
  return {
    ackTimeoutMs: 10_000,
    signatureHeaders: ['x-square-hmacsha256-signature', 'x-square-signature'],
    verify(request) {
      const { headers } = request;
      if (!headers.has('x-square-hmacsha256-signature') && headers.has('x-square-signature')) {
        throw new SignatureError('only the SHA-1 x-square-signature was sent; oncehook checks x-square-hmacsha256-signature');
      }
      const signature = requireSignatureHeader(headers, 'x-square-hmacsha256-signature');
      const urls = calledUrls(publicUrl, request.target);
      if (!secrets.some((secret) => urls.some((url) => safeEqual(signature, signatureOf(secret, url, request.body))))) {
        throw new SignatureError(
          "x-square-hmacsha256-signature does not match the notification URL and body under any configured signature key; is publicUrl the origin of the subscription's notification URL?",
        );
      }
      return eventInBody(request.body, { eventId: '/event_id', topic: '/type', occurredAt: '/created_at' });
    },
  };
}

function sample({ source, asked, eventId, secret }: SampleRequest): Sample {
  const body = JSON.stringify({ merchant_id: 'SAMPLE', type: asked.topic ?? 'payment.updated', event_id: eventId, created_at: new Date().toISOString(), data: { type: 'payment', id: 'sample', object: {} } });
  return { body, headers: { 'content-type': 'application/json', 'x-square-hmacsha256-signature': signatureOf(secret, sampleUrl('square', source.publicUrl, asked.path), body) } };
}

export const square = sender({ name: 'square', needs: { publicUrl: NEEDS_URL }, namedByEvent: true, adapter, sample });
