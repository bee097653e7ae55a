/**
 * Standard Webhooks (https://www.standardwebhooks.com): `webhook-signature` lists space-separated
 * `v1,<base64>` entries (several while a secret rotates) over `${webhook-id}.${webhook-timestamp}.${body}`.
 * `webhook-id` stays the same across retries, so it names both the event and its delivery to this endpoint; a
 * retry (with a new timestamp) is answered as duplicate_delivery.
 */
import { SignatureError } from '../src/errors.ts';
import { jsonPointer } from '../src/json-pointer.ts';
import { parseJson } from './body.ts';
import { isoDate, optionalString, requireId } from './identity.ts';
import { sender, type Sample, type SampleRequest, type SenderAdapter, type SenderSource } from './sender.ts';
import { anySignatureMatches, checkTimestamp, hmac, requireSignatureHeader } from './signature.ts';

const TOLERANCE_SECONDS = 5 * 60;
const SECRET_PREFIX = 'whsec_';

/**
 * The key is the base64 after the optional `whsec_` prefix, as in the reference library. Node's base64
 * decoder skips characters it does not know, so a mistyped secret is refused here instead of becoming a
 * different key that makes every delivery fail with 401.
 */
/** A v1 signature: base64 HMAC-SHA256 of `${id}.${timestamp}.${body}` under the decoded key. */
const v1 = (key: Buffer, id: string, timestamp: string | number, body: string | Uint8Array) => hmac('sha256', key, 'base64', `${id}.${timestamp}.`, body);

function standardWebhooksKey(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.length % 4 === 1) {
    throw new Error('a standard-webhooks secret must be base64, optionally prefixed with "whsec_"');
  }
  return Buffer.from(encoded, 'base64');
}

function adapter({ secrets }: SenderSource): SenderAdapter {
  const keys = secrets.map(standardWebhooksKey);
  return {
    ackTimeoutMs: 15_000,
    signatureHeaders: ['webhook-signature'],
    verify(request) {
      const { headers } = request;
      const id = headers.get('webhook-id');
      if (id === null) throw new SignatureError('missing webhook-id header; it is part of the signed content', 'missing_header');
      const timestamp = requireSignatureHeader(headers, 'webhook-timestamp');
      const signatures = requireSignatureHeader(headers, 'webhook-signature')
        .split(' ')
        .filter((entry) => entry.startsWith('v1,'))
        .map((entry) => entry.slice('v1,'.length));
      if (signatures.length === 0) throw new SignatureError('webhook-signature has no v1,<signature> entry');
      checkTimestamp(timestamp, request.now, TOLERANCE_SECONDS, 'webhook-timestamp');

      const sign = (key: Buffer) => v1(key, id, timestamp, request.body);
      if (!anySignatureMatches(keys, sign, signatures, 'base64')) {
        throw new SignatureError('no v1 signature in webhook-signature matches under any configured secret');
      }
      const json = parseJson(request.body);
      const eventId = requireId(id, 'webhook-id header');
      return {
        deliveryId: eventId,
        eventId,
        topic: optionalString(jsonPointer(json, '/type')),
        occurredAt: isoDate(jsonPointer(json, '/timestamp')),
        json,
      };
    },
  };
}

function sample({ asked, eventId, secret, now }: SampleRequest): Sample {
  const id = asked.eventId ?? `msg_${eventId}`;
  const body = JSON.stringify({ type: asked.topic ?? 'sample.created', timestamp: new Date().toISOString(), data: {} });
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(now),
      'webhook-signature': `v1,${v1(standardWebhooksKey(secret), id, now, body)}`,
    },
  };
}

export const standardWebhooks = sender({
  name: 'standard-webhooks',
  secretKey: { decode: standardWebhooksKey, problem: 'a standard-webhooks secret must be base64, optionally prefixed with "whsec_"' },
  namedByEvent: true,
  adapter,
  sample,
});
