/**
 * HubSpot's Webhooks API. Signature v3 (https://developers.hubspot.com/docs/apps/legacy-apps/authentication/validating-requests,
 * "Validate the v3 request signature"; @hubspot/api-client's `Signature.isValid`): `X-HubSpot-Signature-v3` is the
 * base64 HMAC-SHA256, keyed by the app's client secret, of method + URI + body + `X-HubSpot-Request-Timestamp`
 * (unix milliseconds), and a timestamp older than 5 minutes is to be refused. The URI is the full URL HubSpot called,
 * with the characters HubSpot lists decoded. Behind a proxy the gateway cannot see the host HubSpot used, so it is the
 * source's `publicUrl` origin with the path and query the request arrived at.
 *
 * A delivery is a JSON array of events (https://developers.hubspot.com/docs/api/webhooks, "Webhook payloads"), each
 * recorded as its own event. HubSpot says an `eventId` "is not guaranteed to be unique", so each is named within the
 * account and the subscription that notified it: `portalId:subscriptionId:eventId`. A retry repeats all three (only
 * `attemptNumber` grows), so this names the delivery of that event and the event. HubSpot waits 5 seconds for an
 * answer ("Retries"), and does not retry a 400, 401, 403, 404 or 405.
 */
import { InputError, SignatureError } from '../src/errors.ts';
import { jsonPointer } from '../src/json-pointer.ts';
import { jsonKind, parseJson, withinBatchLimit } from './body.ts';
import { optionalString, requireId, stringOrIntegerId, unixMillisecondsDate } from './identity.ts';
import { required, sender, type Sample, type SampleRequest, type SenderAdapter, type SenderSource } from './sender.ts';
import { anySignatureMatches, checkMillisecondsTimestamp, hmac, requireSignatureHeader } from './signature.ts';
import type { EventItem, InboundRequest } from './types.ts';

const TOLERANCE_SECONDS = 300;
const NEEDS_URL = 'a hubspot source needs the URL HubSpot calls (https://…/in/<source>): HubSpot signs it';

/** Base64 HMAC-SHA256 of `POST` + the URI + the body + the timestamp, under the app's client secret. */
const signatureOf = (secret: string, uri: string, body: string | Uint8Array, timestamp: string) => hmac('sha256', secret, 'base64', `POST${uri}`, body, timestamp);

/** What HubSpot's v3 instructions decode in the URI before it is signed; nothing else is. */
const DECODED: Readonly<Record<string, string>> = {
  '%3A': ':', '%2F': '/', '%3F': '?', '%40': '@', '%21': '!', '%24': '$',
  '%27': "'", '%28': '(', '%29': ')', '%2A': '*', '%2C': ',', '%3B': ';',
};

/**
 * The URI HubSpot signed: the public origin and the path and query the request arrived at, or the public URL itself
 * where the arrival is not known (a unit test's request).
 */
function hubspotSignedUri(publicUrl: string, target: string | undefined): string {
  const uri = target === undefined ? publicUrl : `${new URL(publicUrl).origin}${target}`;
  return uri.replace(/%(3A|2F|3F|40|21|24|27|28|29|2A|2C|3B)/gi, (code) => DECODED[code.toUpperCase()]!);
}

function verifySignature(request: InboundRequest, secrets: readonly string[], publicUrl: string): void {
  const { headers } = request;
  if (!headers.has('x-hubspot-signature-v3') && headers.has('x-hubspot-signature')) {
    throw new SignatureError('only the v1/v2 X-HubSpot-Signature was sent; oncehook checks X-HubSpot-Signature-v3', 'missing_header');
  }
  const signature = requireSignatureHeader(headers, 'X-HubSpot-Signature-v3');
  const timestamp = requireSignatureHeader(headers, 'X-HubSpot-Request-Timestamp');
  if (!/^\d{1,16}$/.test(timestamp)) {
    throw new SignatureError('X-HubSpot-Request-Timestamp must be a unix timestamp in milliseconds', 'timestamp');
  }
  checkMillisecondsTimestamp(Number(timestamp), request.now, TOLERANCE_SECONDS, 'X-HubSpot-Request-Timestamp');
  const uri = hubspotSignedUri(publicUrl, request.target);
  const sign = (secret: string) => signatureOf(secret, uri, request.body, timestamp);
  if (!anySignatureMatches(secrets, sign, [signature], 'base64')) {
    throw new SignatureError(`X-HubSpot-Signature-v3 does not match POST ${uri} and the body under any configured client secret (check the source's publicUrl)`);
  }
}

function adapter(source: SenderSource): SenderAdapter {
  const { secrets } = source;
  const publicUrl = required(source.publicUrl, 'publicUrl', NEEDS_URL);
  return {
    ackTimeoutMs: 5000,
    signatureHeaders: ['x-hubspot-signature-v3', 'x-hubspot-signature'],
    verify(request) {
      verifySignature(request, secrets, publicUrl);
      const json = parseJson(request.body);
      if (!Array.isArray(json) || json.length === 0) {
        throw new InputError('malformed_body', `the body is ${Array.isArray(json) ? 'an empty list' : jsonKind(json)}, not HubSpot's list of events`);
      }
      const items = withinBatchLimit(json, request).map((event, i): EventItem => {
        const part = (field: string) => stringOrIntegerId(jsonPointer(event, `/${field}`), `event ${i}'s ${field}`);
        const id = requireId(`${part('portalId')}:${part('subscriptionId')}:${part('eventId')}`, `event ${i}'s id (portalId:subscriptionId:eventId)`);
        return {
          deliveryId: id,
          eventId: id,
          topic: optionalString(jsonPointer(event, '/subscriptionType')),
          occurredAt: unixMillisecondsDate(jsonPointer(event, '/occurredAt')),
          json: event,
          body: Buffer.from(JSON.stringify(event)),
        };
      });
      // The delivery as a whole has no ID of its own: it is named by its first event.
      return { deliveryId: items[0]!.deliveryId, eventId: items[0]!.eventId, topic: null, occurredAt: null, json, items };
    },
  };
}

/** One event in HubSpot's list; its ID is what the event ID names, in the account and subscription of the sample. */
function sample({ source, asked, eventId, secret }: SampleRequest): Sample {
  const body = JSON.stringify([
    { eventId: Number(eventId) || eventId, subscriptionId: 1, portalId: 1, appId: 1, occurredAt: Date.now(), subscriptionType: asked.topic ?? 'contact.creation', attemptNumber: 0, objectId: 1, changeSource: 'CRM' },
  ]);
  const timestamp = String(Date.now());
  const uri = hubspotSignedUri(required(source.publicUrl, 'publicUrl', NEEDS_URL), asked.path);
  return {
    body,
    headers: { 'content-type': 'application/json', 'x-hubspot-request-timestamp': timestamp, 'x-hubspot-signature-v3': signatureOf(secret, uri, body, timestamp) },
  };
}

export const hubspot = sender({
  name: 'hubspot',
  needs: { publicUrl: NEEDS_URL },
  namedByEvent: true,
  adapter,
  sample,
});
