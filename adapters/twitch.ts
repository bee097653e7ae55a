/**
 * Twitch EventSub over webhooks (https://dev.twitch.tv/docs/eventsub/handling-webhook-events/).
 *
 * - "Verifying the event message": `Twitch-Eventsub-Message-Signature: sha256=<hex>` is HMAC-SHA256, keyed by the
 *   secret given when subscribing, of Twitch-Eventsub-Message-Id + Twitch-Eventsub-Message-Timestamp + the raw body.
 *   The timestamp is RFC 3339 with nanoseconds, not unix seconds ("All timestamps are in RFC3339 format").
 * - "Guarding against replay attacks": refuse a Twitch-Eventsub-Message-Timestamp older than 10 minutes; one 10
 *   minutes ahead is refused as well (a forged or skewed clock), as every adapter checks both directions.
 * - Twitch-Eventsub-Message-Type: `webhook_callback_verification` ("Responding to a challenge request") is answered,
 *   once verified, with the bare `challenge` as text/plain; `revocation` ("Revoking your subscription") says Twitch
 *   revoked the subscription (why: `subscription.status`) and asks only for a 2xx: recorded, informational, no task;
 *   `notification` carries the event.
 * - Identities. Twitch-Eventsub-Message-Id names the message, and a resent message keeps it (EventSub overview,
 *   "Handling duplicate events"; Twitch's dedupe advice is to track it): it is the delivery ID, and the event ID as
 *   well. Not `event.id`: where a type has one it names a thing, not a happening — every channel.poll.progress of
 *   one poll, every hype_train.progress of one train, carries the same id, and deduplicating on it would swallow
 *   all but the first. Not the subscription: it carries all its events. Twitch refuses a second subscription with
 *   the same type and condition (409), so one event does not come under two message IDs. The topic is the signed
 *   body's `subscription.type`, which Twitch-Eventsub-Subscription-Type repeats outside the signature.
 * - Ack: "You must respond to notification requests within a few seconds"; Twitch names no number. 10 s, the
 *   budget the contract gives Twitch and the timeout Twitch's own CLI gives its requests (twitch-cli
 *   `internal/events/trigger/forward_event.go`); a later answer only makes Twitch resend, which is deduplicated.
 */
import { randomUUID } from 'node:crypto';
import { InputError, SignatureError } from '../src/errors.ts';
import { jsonPointer } from '../src/json-pointer.ts';
import { jsonKind, parseJson } from './body.ts';
import { optionalString, requireId } from './identity.ts';
import { sender, type Sample, type SampleRequest, type SenderAdapter, type SenderSource } from './sender.ts';
import { anySignatureMatches, hmac, requireSignatureHeader } from './signature.ts';
import type { Identity } from './types.ts';

const TOLERANCE_SECONDS = 600;
const PREFIX = 'sha256=';
/** Hex HMAC-SHA256 of the message ID, the timestamp as Twitch wrote it, and the body. */
const signatureOf = (secret: string, messageId: string, timestamp: string, body: string | Uint8Array) => hmac('sha256', secret, 'hex', messageId, timestamp, body);
const TIMESTAMP = 'Twitch-Eventsub-Message-Timestamp';
// RFC 3339 as Twitch writes it: up to nanoseconds, in UTC or with an offset. Date.parse alone also reads "1" or
// "May 1", and a timestamp it guessed at would be checked against the window as if Twitch had sent it.
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;

/** When Twitch sent the message, checked against the window in both directions. */
function sentAt(value: string, now: Date): Date {
  const ms = RFC3339.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw new SignatureError(`${TIMESTAMP} must be an RFC 3339 time such as 2019-11-16T10:11:12.634234626Z`, 'timestamp');
  }
  const age = Math.floor((now.getTime() - ms) / 1000);
  const allowed = `more than the ${TOLERANCE_SECONDS} s Twitch allows`;
  if (age > TOLERANCE_SECONDS) throw new SignatureError(`${TIMESTAMP} is ${age} s old, ${allowed}; a replay, or a clock is wrong`, 'timestamp');
  if (-age > TOLERANCE_SECONDS) throw new SignatureError(`${TIMESTAMP} is ${-age} s in the future, ${allowed}; check the clocks`, 'timestamp');
  return new Date(ms);
}

function adapter({ secrets }: SenderSource): SenderAdapter {
  return {
    ackTimeoutMs: 10_000,
    signatureHeaders: ['twitch-eventsub-message-signature'],
    verify(request) {
      const { headers } = request;
      const signature = requireSignatureHeader(headers, 'Twitch-Eventsub-Message-Signature');
      const messageId = requireSignatureHeader(headers, 'Twitch-Eventsub-Message-Id');
      const timestamp = requireSignatureHeader(headers, TIMESTAMP);
      const type = requireSignatureHeader(headers, 'Twitch-Eventsub-Message-Type');
      if (!signature.startsWith(PREFIX)) throw new SignatureError('Twitch-Eventsub-Message-Signature must look like "sha256=<hex>"');
      const occurredAt = sentAt(timestamp, request.now);
      // The header values as sent, not re-formatted: the signature is over Twitch's own text of the timestamp.
      const sign = (secret: string) => signatureOf(secret, messageId, timestamp, request.body);
      if (!anySignatureMatches(secrets, sign, [signature.slice(PREFIX.length)], 'hex')) {
        throw new SignatureError('Twitch-Eventsub-Message-Signature does not match under any configured secret (the one given when subscribing)');
      }
      const json = parseJson(request.body);
      const id = requireId(messageId, 'Twitch-Eventsub-Message-Id header');
      const identity: Identity = { deliveryId: id, eventId: id, topic: optionalString(jsonPointer(json, '/subscription/type')), occurredAt, json };
      // The message type is outside the signature: each is checked against the signed body it must come with, so
      // a replayed notification relabelled a revocation is refused rather than recorded as no task.
      const event = jsonPointer(json, '/event');
      if (type === 'webhook_callback_verification') {
        const challenge = jsonPointer(json, '/challenge');
        if (typeof challenge !== 'string' || challenge === '') throw new InputError('malformed_body', 'a webhook_callback_verification without its challenge');
        return { ...identity, handshake: { status: 200, contentType: 'text/plain', body: challenge } };
      }
      if (type === 'notification') {
        if (typeof event !== 'object' || event === null || Array.isArray(event)) {
          throw new InputError('malformed_body', `a notification whose event is ${event === undefined ? 'missing' : jsonKind(event)}, not an object`);
        }
        return identity;
      }
      if (event !== undefined) throw new InputError('malformed_body', `a ${type} message carries an event; Twitch sends events as notifications`);
      // A revocation, or a type Twitch adds later: what it says is kept, and no action is given a task for it.
      return { ...identity, informational: true };
    },
  };
}

/** The message ID is the delivery's and the event's; it is signed with the timestamp as Twitch writes it. */
function sample({ asked, secret }: SampleRequest): Sample {
  const id = asked.eventId ?? randomUUID();
  const type = asked.topic ?? 'channel.follow';
  const sentAt = new Date().toISOString();
  const subscription = { id: randomUUID(), status: 'enabled', type, version: '1', cost: 0, condition: { broadcaster_user_id: '12826' }, created_at: sentAt };
  const body = JSON.stringify({ subscription, event: { user_id: '1337', user_login: 'sample_user', broadcaster_user_id: '12826', followed_at: sentAt } });
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'twitch-eventsub-message-id': id,
      'twitch-eventsub-message-retry': '0',
      'twitch-eventsub-message-type': 'notification',
      'twitch-eventsub-message-timestamp': sentAt,
      'twitch-eventsub-subscription-type': type,
      'twitch-eventsub-subscription-version': '1',
      'twitch-eventsub-message-signature': PREFIX + signatureOf(secret, id, sentAt, body),
    },
  };
}

export const twitch = sender({ name: 'twitch', namedByEvent: true, adapter, sample });
