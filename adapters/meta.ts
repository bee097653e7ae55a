/**
 * Meta's Graph API webhooks — WhatsApp Business, Messenger, Instagram, Pages
 * (https://developers.facebook.com/docs/graph-api/webhooks/getting-started/).
 *
 * - "Verification Requests": when the callback URL or its Verify Token is set, Meta sends
 *   `GET ?hub.mode=subscribe&hub.challenge=…&hub.verify_token=…`; the endpoint checks hub.verify_token against the
 *   token entered in the App Dashboard (the source's `verifyToken`) and answers with hub.challenge. Anything else is
 *   403: Meta signs none of it, so the token is all that tells Meta from anyone.
 * - "Validating Payloads": `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 of the body under the App Secret.
 *   Meta signs "an escaped unicode version of the payload" (`\u00e4`, not `ä`), which is what it sends: the raw
 *   bytes verify; a body parsed and re-serialized would not.
 * - No timestamp is signed, so there is no window; the IDs below come from the signed body, so a replay names
 *   the same events and is deduplicated.
 * - Batches: "entry is an array and may contain multiple objects" (Messenger Platform, "Webhook Events"); each
 *   entry is one event. Its tasks send `{"object", "entry": [that entry]}`: Meta's own shape, so a receiver
 *   written for Meta's deliveries reads it.
 * - Identities. Meta names no event. An entry's `time` is when the notification was sent, "not when the change …
 *   occurred", and may differ on a retry, so it is no part of an ID. An entry that carries exactly one WhatsApp
 *   message or status (the common case) is named by Meta's own ID of it: the message's `wamid…`, or `wamid…:<status>`
 *   for a status, since one message has a `sent`, a `delivered` and a `read` status under the one wamid (WhatsApp
 *   "messages webhook reference", "Status messages webhook reference") — readable, and what a person looks up. Any
 *   other entry (several messages, Messenger's `messaging[]`, whose mids an unsend or a reaction reuses, a Page's
 *   `changes[]`) is named by a hash of its content without `time` (content-id.ts): the same on each retry, however
 *   Meta batches it. Topic: the change's `field` (`messages`, `feed`, `comments`…), or `messaging` / `standby` for
 *   the Messenger and Instagram entries that carry those instead.
 * - Ack: "A webhook call will timeout after 20 seconds" (Messenger Platform Technical FAQ,
 *   https://developers.facebook.com/docs/messenger-platform/faq).
 */
import { HttpError, InputError, SignatureError } from '../src/errors.ts';
import { jsonPointer } from '../src/json-pointer.ts';
import { jsonKind, parseJson, withinBatchLimit } from './body.ts';
import { contentId } from './content-id.ts';
import { optionalString, requireId, unixMillisecondsDate, unixSecondsDate } from './identity.ts';
import { required, sender, type Sample, type SampleRequest, type SenderAdapter, type SenderSource } from './sender.ts';
import { anySignatureMatches, hmac, requireSignatureHeader, safeEqual } from './signature.ts';
import type { EventItem } from './types.ts';

const PREFIX = 'sha256=';
const signatureOf = (secret: string, body: string | Uint8Array) => hmac('sha256', secret, 'hex', body);
// Without it the source could never answer Meta's GET check, and Meta sends no event to an unverified URL.
const NEEDS_TOKEN =
  "a meta source needs verifyToken: the Verify Token entered with the callback URL in the App Dashboard, which Meta's GET check presents as hub.verify_token";
/** An ID of Meta's as it may name an event: printable ASCII, short enough to be a key. Anything else is hashed. */
const READABLE_ID = /^[\x21-\x7e]{1,200}$/;

const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** Meta's IDs of the WhatsApp messages and statuses an entry carries. */
function whatsappIds(entry: Record<string, unknown>): string[] {
  const ids: string[] = [];
  for (const change of list(entry.changes)) {
    const value = jsonPointer(change, '/value');
    for (const message of list(jsonPointer(value, '/messages'))) {
      const id = jsonPointer(message, '/id');
      if (typeof id === 'string') ids.push(id);
    }
    for (const status of list(jsonPointer(value, '/statuses'))) {
      const [id, state] = [jsonPointer(status, '/id'), jsonPointer(status, '/status')];
      if (typeof id === 'string' && typeof state === 'string') ids.push(`${id}:${state}`);
    }
  }
  return ids;
}

function topicOf(entry: Record<string, unknown>): string | null {
  const field = optionalString(jsonPointer(entry, '/changes/0/field'));
  if (field !== null) return field;
  if (Array.isArray(entry.messaging)) return 'messaging';
  return Array.isArray(entry.standby) ? 'standby' : null;
}

/** When it happened, as the entry's own content says: WhatsApp's unix seconds, Messenger's milliseconds. */
function occurredAtOf(entry: Record<string, unknown>): Date | null {
  const value = jsonPointer(entry, '/changes/0/value');
  const whatsapp = jsonPointer(value, '/messages/0/timestamp') ?? jsonPointer(value, '/statuses/0/timestamp');
  if (whatsapp !== undefined) return unixSecondsDate(whatsapp);
  return unixMillisecondsDate(jsonPointer(entry, '/messaging/0/timestamp'));
}

function item(object: unknown, entry: unknown, index: number): EventItem {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    throw new InputError('malformed_body', `entry ${index} is ${jsonKind(entry)}, not an object`);
  }
  const fields = entry as Record<string, unknown>;
  const named = whatsappIds(fields);
  const { time: _sentAt, ...content } = fields;
  const eventId = named.length === 1 && READABLE_ID.test(named[0]!) ? named[0]! : contentId('meta-', { object, entry: content });
  const own = { object, entry: [entry] };
  return {
    deliveryId: eventId,
    eventId,
    topic: topicOf(fields),
    occurredAt: occurredAtOf(fields),
    json: own,
    body: Buffer.from(JSON.stringify(own)),
  };
}

function adapter(source: SenderSource): SenderAdapter {
  const { secrets } = source;
  const verifyToken = required(source.verifyToken, 'verifyToken', NEEDS_TOKEN);
  return {
    ackTimeoutMs: 20_000,
    signatureHeaders: ['x-hub-signature-256', 'x-hub-signature'],
    verify(request) {
      const { headers } = request;
      if (!headers.has('x-hub-signature-256') && headers.has('x-hub-signature')) {
        throw new SignatureError('only the SHA-1 X-Hub-Signature was sent; oncehook checks X-Hub-Signature-256', 'missing_header');
      }
      const value = requireSignatureHeader(headers, 'X-Hub-Signature-256');
      if (!value.startsWith(PREFIX)) throw new SignatureError('X-Hub-Signature-256 must look like "sha256=<hex>"');
      const sign = (secret: string) => signatureOf(secret, request.body);
      if (!anySignatureMatches(secrets, sign, [value.slice(PREFIX.length)], 'hex')) {
        throw new SignatureError("X-Hub-Signature-256 does not match the body under any configured secret (the app's App Secret)");
      }
      const json = parseJson(request.body);
      const entries = jsonPointer(json, '/entry');
      if (!Array.isArray(entries) || entries.length === 0) {
        const what = Array.isArray(entries) ? 'an empty list' : entries === undefined ? 'missing' : jsonKind(entries);
        throw new InputError('malformed_body', `the body's entry is ${what}, not Meta's list of entries`);
      }
      const object = jsonPointer(json, '/object');
      const items = withinBatchLimit(entries, request).map((entry, i) => item(object, entry, i));
      // The delivery as a whole has no ID of its own: it is named by its first entry.
      return { deliveryId: items[0]!.deliveryId, eventId: items[0]!.eventId, topic: null, occurredAt: null, json, items };
    },
    answerGet(query) {
      const token = query.get('hub.verify_token');
      // Constant-time: the token is the only secret this check has.
      if (token === null || !safeEqual(token, verifyToken)) {
        throw new HttpError(403, 'invalid_verify_token', `hub.verify_token ${token === null ? 'is missing' : "is not this source's verifyToken"}`);
      }
      const challenge = query.get('hub.challenge');
      if (query.get('hub.mode') !== 'subscribe' || challenge === null || challenge === '') {
        throw new InputError('malformed_request', "Meta's verification request carries hub.mode=subscribe and a hub.challenge; this one does not");
      }
      const id = requireId(`subscribe:${challenge}`, 'hub.challenge');
      return {
        identity: { deliveryId: id, eventId: id, topic: 'subscribe' },
        answer: { status: 200, contentType: 'text/plain', body: challenge },
      };
    },
  };
}

/** A WhatsApp message: Meta's own ID of it (wamid.…) names the event. */
function sample({ asked, eventId, secret, now }: SampleRequest): Sample {
  const id = eventId.startsWith('wamid.') ? eventId : `wamid.${eventId}`;
  const value = {
    messaging_product: 'whatsapp',
    metadata: { display_phone_number: '15550783881', phone_number_id: '106540352242922' },
    messages: [{ from: '16505551234', id, timestamp: String(now), type: 'text', text: { body: 'sample' } }],
  };
  const body = JSON.stringify({ object: 'whatsapp_business_account', entry: [{ id: '102290129340398', changes: [{ value, field: asked.topic ?? 'messages' }] }] });
  return { body, headers: { 'content-type': 'application/json', 'x-hub-signature-256': PREFIX + signatureOf(secret, body) } };
}

export const meta = sender({ name: 'meta', needs: { verifyToken: NEEDS_TOKEN }, namedByEvent: true, adapter, sample });
