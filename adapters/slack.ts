/**
 * Slack's Events API (https://api.slack.com/authentication/verifying-requests-from-slack): `X-Slack-Signature:
 * v0=<hex>` is HMAC-SHA256, keyed by the app's signing secret, of `v0:<X-Slack-Request-Timestamp>:<raw body>`;
 * Slack's SDKs refuse a timestamp more than five minutes off. Slack signs its url_verification too, answered with
 * the challenge once verified (https://api.slack.com/events/url_verification). An event callback's `event_id` is the
 * same on every retry (`X-Slack-Retry-Num`, kept with the delivery's headers), so it names the delivery and the event.
 * Slack waits 3 seconds for an answer.
 */
import { InputError, SignatureError } from '../src/errors.ts';
import { jsonPointer } from '../src/json-pointer.ts';
import { parseJson } from './body.ts';
import { optionalString, stringId, unixSecondsDate } from './identity.ts';
import { sender, type Sample, type SampleRequest, type SenderAdapter, type SenderSource } from './sender.ts';
import { anySignatureMatches, checkTimestamp, hmac, requireSignatureHeader } from './signature.ts';

const TOLERANCE_SECONDS = 300;
const PREFIX = 'v0=';
/** Hex HMAC-SHA256 of `v0:${timestamp}:${body}` under the app's signing secret. */
const v0 = (secret: string, timestamp: string | number, body: string | Uint8Array) => hmac('sha256', secret, 'hex', `v0:${timestamp}:`, body);

function adapter({ secrets }: SenderSource): SenderAdapter {
  return {
    ackTimeoutMs: 3000,
    signatureHeaders: ['x-slack-signature'],
    verify(request) {
      const { headers } = request;
      const timestamp = requireSignatureHeader(headers, 'X-Slack-Request-Timestamp');
      const signature = requireSignatureHeader(headers, 'X-Slack-Signature');
      if (!signature.startsWith(PREFIX)) throw new SignatureError('X-Slack-Signature must look like "v0=<hex>"');
      checkTimestamp(timestamp, request.now, TOLERANCE_SECONDS, 'X-Slack-Request-Timestamp');
      if (!anySignatureMatches(secrets, (secret) => v0(secret, timestamp, request.body), [signature.slice(PREFIX.length)], 'hex')) {
        throw new SignatureError("X-Slack-Signature does not match the body under any configured signing secret (the app's Signing Secret)");
      }
      const json = parseJson(request.body);
      const type = optionalString(jsonPointer(json, '/type'));
      if (type === 'url_verification') {
        const challenge = jsonPointer(json, '/challenge');
        if (typeof challenge !== 'string') throw new InputError('missing_identity', 'a url_verification without its challenge');
        return {
          deliveryId: `url_verification:${timestamp}`,
          eventId: `url_verification:${timestamp}`,
          topic: 'url_verification',
          occurredAt: null,
          json,
          handshake: { status: 200, contentType: 'application/json', body: JSON.stringify({ challenge }) },
        };
      }
      const eventId = stringId(jsonPointer(json, '/event_id'), 'event id (body "event_id")');
      return {
        deliveryId: eventId,
        eventId,
        // The inner event's type (`app_mention`, `message`…): what an action filters on.
        topic: optionalString(jsonPointer(json, '/event/type')) ?? type,
        occurredAt: unixSecondsDate(jsonPointer(json, '/event_time')),
        json,
      };
    },
  };
}

function sample({ asked, eventId, secret, now }: SampleRequest): Sample {
  const body = JSON.stringify({ type: 'event_callback', event_id: asked.eventId ?? `Ev${eventId}`, event_time: now, event: { type: asked.topic ?? 'app_mention', text: 'sample' } });
  return {
    body,
    headers: { 'content-type': 'application/json', 'x-slack-request-timestamp': String(now), 'x-slack-signature': PREFIX + v0(secret, now, body) },
  };
}

export const slack = sender({ name: 'slack', namedByEvent: true, adapter, sample });
