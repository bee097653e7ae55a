/**
 * Zoom webhooks (https://developers.zoom.us/docs/api/webhooks/).
 *
 * - "Verify webhook events": `x-zm-signature: v0=<hex>` is HMAC-SHA256, keyed by the app's Secret Token, of
 *   `v0:<x-zm-request-timestamp>:<raw body>`; the timestamp is unix seconds.
 * - "Validate your webhook endpoint": Zoom checks the endpoint when it is set and every 72 hours with a signed
 *   `{"event": "endpoint.url_validation", "payload": {"plainToken"}}`, answered 200 with `{"plainToken",
 *   "encryptedToken"}`, the token's hex HMAC-SHA256 under the Secret Token — the one that verified the request, so a
 *   check signed with a rotated-in secret is answered with that secret.
 * - The window. Zoom's docs name none. Zoom retries a delivery it got no 200/204 for 5, 20 and 60 minutes apart
 *   (https://developers.zoom.us/blog/webhook-delays/: 85 minutes after the first attempt in all), and does not say
 *   whether a retry is stamped afresh; a window shorter than that could refuse every retry of the one delivery
 *   that failed. So 90 minutes back, 5 minutes ahead (clock skew). A replay inside the window names the same event
 *   (below) and is deduplicated.
 * - Identities. Zoom names no event ID: a body is `{"event", "event_ts" (ms), "payload": {"account_id", "object"}}`
 *   and the same body is sent on each retry. The event ID is a hash of that signed body (see content-id.ts), so a
 *   retry, and a second event subscription that delivers the same event, dedupe; it also names the delivery.
 *   Topic: `event` (`meeting.started`); occurrence: `event_ts`.
 * - Ack: "respond with either a 200 or a 204 HTTP status code within three seconds" (the same page).
 */
import { InputError, SignatureError } from '../src/errors.ts';
import { jsonPointer } from '../src/json-pointer.ts';
import { parseJson } from './body.ts';
import { contentId } from './content-id.ts';
import { optionalString, unixMillisecondsDate } from './identity.ts';
import { sender, type Sample, type SampleRequest, type SenderAdapter, type SenderSource } from './sender.ts';
import { checkTimestamp, hmac, requireSignatureHeader, safeEqual } from './signature.ts';

const PAST_SECONDS = 90 * 60;
const FUTURE_SECONDS = 5 * 60;
const PREFIX = 'v0=';
/** Hex HMAC-SHA256 of `v0:${timestamp}:${body}` under the app's Secret Token. */
const v0 = (secret: string, timestamp: string | number, body: string | Uint8Array) => hmac('sha256', secret, 'hex', `v0:${timestamp}:`, body);

function adapter({ secrets }: SenderSource): SenderAdapter {
  return {
    ackTimeoutMs: 3000,
    signatureHeaders: ['x-zm-signature'],
    verify(request) {
      const { headers } = request;
      const signature = requireSignatureHeader(headers, 'x-zm-signature');
      const timestamp = requireSignatureHeader(headers, 'x-zm-request-timestamp');
      if (!signature.startsWith(PREFIX)) throw new SignatureError('x-zm-signature must look like "v0=<hex>"');
      checkTimestamp(timestamp, request.now, PAST_SECONDS, 'x-zm-request-timestamp', FUTURE_SECONDS);
      // Which secret matched, not only whether one did: the url_validation answer is made with it.
      const provided = signature.slice(PREFIX.length).toLowerCase();
      const secret = secrets.find((candidate) => safeEqual(provided, v0(candidate, timestamp, request.body)));
      if (secret === undefined) {
        throw new SignatureError("x-zm-signature does not match the body under any configured secret (the app's Secret Token)");
      }
      const json = parseJson(request.body);
      const event = optionalString(jsonPointer(json, '/event'));
      if (event === 'endpoint.url_validation') {
        const plainToken = jsonPointer(json, '/payload/plainToken');
        if (typeof plainToken !== 'string' || plainToken === '') {
          throw new InputError('malformed_body', 'an endpoint.url_validation without its payload.plainToken');
        }
        const encryptedToken = hmac('sha256', secret, 'hex', plainToken);
        return {
          deliveryId: `endpoint.url_validation:${timestamp}`,
          eventId: `endpoint.url_validation:${timestamp}`,
          topic: event,
          occurredAt: unixMillisecondsDate(jsonPointer(json, '/event_ts')),
          json,
          handshake: { status: 200, contentType: 'application/json', body: JSON.stringify({ plainToken, encryptedToken }) },
        };
      }
      const eventId = contentId('zoom-', json);
      return { deliveryId: eventId, eventId, topic: event, occurredAt: unixMillisecondsDate(jsonPointer(json, '/event_ts')), json };
    },
  };
}

/**
 * Zoom names an event by its body: the same --event-id makes the same body (its event_ts the start of the day, not
 * now), so sending it twice shows the second deduplicated.
 */
function sample({ asked, eventId, secret, now }: SampleRequest): Sample {
  const eventTs = asked.eventId === undefined ? Date.now() : new Date().setUTCHours(0, 0, 0, 0);
  const body = JSON.stringify({
    event: asked.topic ?? 'meeting.started',
    event_ts: eventTs,
    payload: { account_id: 'sample-account', object: { id: eventId, uuid: eventId, topic: 'Sample meeting', host_id: 'sample-host' } },
  });
  return {
    body,
    headers: { 'content-type': 'application/json; charset=utf-8', 'x-zm-request-timestamp': String(now), 'x-zm-signature': PREFIX + v0(secret, now, body) },
  };
}

export const zoom = sender({ name: 'zoom', namedByEvent: true, adapter, sample });
