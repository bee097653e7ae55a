/**
 * Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>…]`, HMAC-SHA256 of `${t}.${body}`. Stripe lists
 * several v1 signatures while an endpoint secret is being rolled; other schemes (v0) are ignored. Stripe sends
 * no delivery ID: an endpoint receives an event once and retries it, so the delivery is the event itself, and a
 * retry (signed at a new t) is answered as duplicate_delivery.
 */
import { SignatureError } from '../src/errors.ts';
import { eventInBody, unixSecondsDate } from './identity.ts';
import { sender, type Sample, type SampleRequest, type SenderAdapter, type SenderSource } from './sender.ts';
import { anySignatureMatches, checkTimestamp, hmac, requireSignatureHeader } from './signature.ts';

// Stripe's own libraries default to five minutes.
const TOLERANCE_SECONDS = 300;

/** A v1 signature: hex HMAC-SHA256 of `${t}.${body}`. */
const v1 = (secret: string, timestamp: string | number, body: string | Uint8Array) => hmac('sha256', secret, 'hex', `${timestamp}.`, body);

function parseSignatureHeader(value: string): { timestamp: string; signatures: string[] } {
  let timestamp: string | undefined;
  const signatures: string[] = [];
  for (const item of value.split(',')) {
    const separator = item.indexOf('=');
    if (separator < 0) continue;
    const key = item.slice(0, separator).trim();
    const val = item.slice(separator + 1).trim();
    if (key === 't') timestamp ??= val;
    if (key === 'v1') signatures.push(val);
  }
  if (timestamp === undefined) throw new SignatureError('Stripe-Signature has no t= timestamp', 'timestamp');
  if (signatures.length === 0) throw new SignatureError('Stripe-Signature has no v1= signature');
  return { timestamp, signatures };
}

function adapter({ secrets }: SenderSource): SenderAdapter {
  return {
    ackTimeoutMs: 15_000,
    signatureHeaders: ['stripe-signature'],
    verify(request) {
      const header = requireSignatureHeader(request.headers, 'Stripe-Signature');
      const { timestamp, signatures } = parseSignatureHeader(header);
      checkTimestamp(timestamp, request.now, TOLERANCE_SECONDS, 'the Stripe-Signature timestamp');
      const sign = (secret: string) => v1(secret, timestamp, request.body);
      if (!anySignatureMatches(secrets, sign, signatures, 'hex')) {
        throw new SignatureError(
          'no v1 signature in Stripe-Signature matches the body under any configured endpoint secret (whsec_…)',
        );
      }
      return eventInBody(request.body, { eventId: '/id', topic: '/type', occurredAt: '/created', date: unixSecondsDate });
    },
  };
}

function sample({ asked, eventId, secret, now }: SampleRequest): Sample {
  // Stripe's event IDs begin evt_; one given whole is kept as it is.
  const id = eventId.startsWith('evt_') ? eventId : `evt_${eventId}`;
  const body = JSON.stringify({ id, type: asked.topic ?? 'charge.succeeded', created: now, data: {} });
  return { body, headers: { 'content-type': 'application/json', 'stripe-signature': `t=${now},v1=${v1(secret, now, body)}` } };
}

export const stripe = sender({ name: 'stripe', namedByEvent: true, adapter, sample });
