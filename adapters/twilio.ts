/**
 * Twilio (https://www.twilio.com/docs/usage/webhooks/webhooks-security, and the `twilio` SDK's
 * webhooks.validateRequest / validateRequestWithBody, which this follows): `X-Twilio-Signature` is base64
 * HMAC-SHA1, keyed by the account's Auth Token, of the full URL Twilio called followed by the POST parameters
 * sorted by name, each name and value concatenated. A Webhooks Rule signs with its SharedKey instead, and names
 * the hash in `X-Twilio-Webhooks-Signature-Settings: key=…,algorithm=HMAC_SHA256`; `secrets` may hold either.
 * A JSON body (Event Streams) is signed over the URL alone, which carries the body's hex SHA-256 as `bodySHA256`.
 * There is no timestamp. The URL is the source's `publicUrl` origin with the path and query called.
 *
 * Names: the event is the resource at a status (`SM…:delivered`), because a status callback repeats one
 * MessageSid or CallSid with each new status; the delivery is `I-Twilio-Idempotency-Token`, which Twilio repeats
 * when it retries a request (https://www.twilio.com/docs/usage/webhooks/webhooks-connection-overrides), else the
 * event. An Event Streams body is a list of CloudEvents: one event per item, named by its `id`. Twilio waits 15 s
 * (the Read Timeout's default, same page).
 */
import { InputError, SignatureError } from '../src/errors.ts';
import { jsonPointer } from '../src/json-pointer.ts';
import { decodeUtf8, jsonKind, parseJson, withinBatchLimit } from './body.ts';
import { formJson, parseForm, type FormFields } from './form.ts';
import { isoDate, optionalString, requireId, stringId } from './identity.ts';
import { required, sender, type Sample, type SampleRequest, type SenderAdapter, type SenderSource } from './sender.ts';
import { hmac, requireSignatureHeader, safeEqual, sha256Hex } from './signature.ts';
import { calledUrls, sampleUrl, targetQuery, withAndWithoutPort } from './signed-url.ts';
import type { EventItem, Identity, InboundRequest } from './types.ts';

// Twilio signs the URL it calls: without the public one, no delivery could ever verify.
const NEEDS_URL = 'a twilio source needs "publicUrl", the origin twilio calls (e.g. "https://hooks.example.com"): it signs the URL it calls';

const ALGORITHMS: Record<string, 'sha1' | 'sha256'> = { HMAC_SHA1: 'sha1', HMAC_SHA256: 'sha256' };

/** The hash a Webhooks Rule names; without the header, the Auth Token's HMAC-SHA1. */
function algorithmOf(settings: string | null): 'sha1' | 'sha256' {
  const named = settings
    ?.split(',')
    .map((part) => part.split('='))
    .find(([key]) => key?.trim() === 'algorithm')?.[1]
    ?.trim();
  if (!named) return 'sha1';
  const algorithm = ALGORITHMS[named.toUpperCase()];
  if (!algorithm) throw new SignatureError(`X-Twilio-Webhooks-Signature-Settings names ${JSON.stringify(named)}; oncehook checks HMAC_SHA1 and HMAC_SHA256`);
  return algorithm;
}

/** The parameters as Twilio signs them: sorted by name, each name then value, a repeated name's values deduplicated and sorted. */
function signedParameters(fields: FormFields): string {
  let signed = '';
  for (const name of [...fields.keys()].sort()) {
    const values = fields.get(name)!;
    for (const value of values.length === 1 ? values : [...new Set(values)].sort()) signed += name + value;
  }
  return signed;
}

/** Which resource a request speaks of, in the order a callback names several (a transcription names its recording and call). */
const RESOURCES = [
  { sid: 'TranscriptionSid', status: ['TranscriptionStatus'] },
  { sid: 'RecordingSid', status: ['RecordingStatus'] },
  { sid: 'MessageSid', status: ['MessageStatus', 'SmsStatus'] },
  { sid: 'SmsSid', status: ['SmsStatus'] },
  { sid: 'CallSid', status: ['CallStatus'] },
] as const;

/**
 * Twilio joins names and values with no separator, so a captured form can be split again into other fields that
 * sign alike (`MessageSid=SM1&SmsSid=SM1` as `MessageSid=SM1SmsSidSM1`). Its IDs are read only where they look
 * like Twilio's — a SID two capitals and hex digits, a status lower-case words — which no such split keeps: the
 * next field's name, absorbed, brings capitals or letters past f.
 */
const SID = /^[A-Z]{2}[0-9a-fA-F]+$/;
const STATUS = /^[a-z][a-z_-]*$/;

function resourceIdentity(json: unknown): Pick<Identity, 'eventId' | 'topic' | 'occurredAt'> {
  const resource = RESOURCES.find(({ sid }) => jsonPointer(json, `/${sid}`) !== undefined);
  if (!resource) {
    throw new InputError('missing_identity', `the request verified but names none of ${RESOURCES.map(({ sid }) => sid).join(', ')}`);
  }
  const sid = stringId(jsonPointer(json, `/${resource.sid}`), `resource id (${resource.sid})`);
  if (!SID.test(sid)) throw new InputError('invalid_identity', `the ${resource.sid} ${JSON.stringify(sid.slice(0, 40))} is not a Twilio SID (two capitals and hex digits)`);
  const status = resource.status.map((name) => optionalString(jsonPointer(json, `/${name}`))).find((value) => value !== null) ?? null;
  if (status !== null && !STATUS.test(status)) throw new InputError('invalid_identity', `the status ${JSON.stringify(status.slice(0, 40))} is not one of Twilio's (lower-case words)`);
  const timestamp = jsonPointer(json, '/Timestamp');
  return {
    eventId: requireId(status === null ? sid : `${sid}:${status}`, `event id (${resource.sid}:${resource.status[0]})`),
    topic: status,
    // Voice callbacks say when, in RFC 2822 ("Tue, 02 Jan 2024 10:00:00 +0000"); messages do not.
    occurredAt: typeof timestamp === 'string' && !Number.isNaN(Date.parse(timestamp)) ? isoDate(new Date(timestamp).toISOString()) : null,
  };
}

/** Event Streams: a list of CloudEvents, each its own event. */
function cloudEvents(json: unknown[]): EventItem[] {
  return json.map((event, i): EventItem => {
    const id = stringId(jsonPointer(event, '/id'), `event ${i}'s id`);
    return { deliveryId: id, eventId: id, topic: optionalString(jsonPointer(event, '/type')), occurredAt: isoDate(jsonPointer(event, '/time')), json: event, body: Buffer.from(JSON.stringify(event)) };
  });
}

function adapter(source: SenderSource): SenderAdapter {
  const { secrets } = source;
  const publicUrl = required(source.publicUrl, 'publicUrl', NEEDS_URL);
  const signatureMatches = (request: InboundRequest, signature: string, ...signed: (string | Uint8Array)[]) => {
    const algorithm = algorithmOf(request.headers.get('x-twilio-webhooks-signature-settings'));
    const urls = calledUrls(publicUrl, request.target).flatMap(withAndWithoutPort);
    return secrets.some((secret) => urls.some((url) => safeEqual(signature, hmac(algorithm, secret, 'base64', url, ...signed))));
  };
  return {
    ackTimeoutMs: 15_000,
    signatureHeaders: ['x-twilio-signature'],
    verify(request) {
      const signature = requireSignatureHeader(request.headers, 'X-Twilio-Signature');
      const bodyHash = targetQuery(request.target).get('bodySHA256');
      let json: unknown;
      if (bodyHash === null) {
        if (/[/+]json\b/i.test(request.headers.get('content-type') ?? '')) {
          throw new SignatureError('a JSON body from Twilio is signed with bodySHA256 in the URL, and this URL has none');
        }
        const fields = parseForm(request.body);
        if (!signatureMatches(request, signature, signedParameters(fields))) {
          throw new SignatureError('X-Twilio-Signature does not match the URL and parameters under any configured Auth Token; is publicUrl the origin Twilio calls?');
        }
        decodeUtf8(request.body);
        json = formJson(fields);
      } else {
        if (!signatureMatches(request, signature)) {
          throw new SignatureError('X-Twilio-Signature does not match the URL under any configured Auth Token; is publicUrl the origin Twilio calls?');
        }
        // The URL is authenticated now, and with it the hash it carries.
        if (!safeEqual(bodyHash.toLowerCase(), sha256Hex(request.body))) throw new SignatureError("the body's SHA-256 is not the bodySHA256 Twilio signed");
        json = parseJson(request.body);
      }
      if (Array.isArray(json)) {
        if (json.length === 0) throw new InputError('malformed_body', 'the body is an empty list of events');
        const items = cloudEvents(withinBatchLimit(json, request));
        return { deliveryId: items[0]!.deliveryId, eventId: items[0]!.eventId, topic: null, occurredAt: null, json, items };
      }
      if (typeof json !== 'object' || json === null) throw new InputError('malformed_body', `the body is ${jsonKind(json)}, not Twilio's parameters`);
      const event = resourceIdentity(json);
      const token = request.headers.get('i-twilio-idempotency-token')?.trim();
      return { deliveryId: token ? requireId(token, 'I-Twilio-Idempotency-Token header') : event.eventId, ...event, json };
    },
  };
}

/**
 * An incoming SMS, as Twilio posts it: form-encoded, the URL and the sorted parameters signed. Twilio's IDs are
 * read only where they look like its SIDs: an --event-id that is not one is made into one.
 */
function sample({ source, asked, eventId, deliveryId, secret }: SampleRequest): Sample {
  const hex = /^[0-9a-f]{1,32}$/i.test(eventId) ? eventId.padStart(32, '0') : sha256Hex(eventId).slice(0, 32);
  const sid = SID.test(eventId) ? eventId : `SM${hex}`;
  const fields: Record<string, string> = { AccountSid: 'AC00000000000000000000000000000000', Body: 'sample', From: '+15005550006', MessageSid: sid, SmsSid: sid, SmsStatus: asked.topic ?? 'received', To: '+15005550001' };
  const body = new URLSearchParams(fields).toString();
  const signed = signedParameters(parseForm(new TextEncoder().encode(body)));
  const signature = hmac('sha1', secret, 'base64', sampleUrl('twilio', source.publicUrl, asked.path), signed);
  return { body, headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature, 'i-twilio-idempotency-token': deliveryId } };
}

export const twilio = sender({ name: 'twilio', needs: { publicUrl: NEEDS_URL }, adapter, sample });
