/**
 * Shopify webhooks: base64 HMAC-SHA256 of the raw body. Shopify sends the `X-Shopify-*` headers and, on newer
 * API versions, the same headers without the prefix; both are read. The event ID is what two subscriptions
 * delivering one event share, so a delivery without it cannot be deduplicated and is refused.
 */
import { InputError, SignatureError } from '../src/errors.ts';
import { parseJsonUnlessDeclaredOther } from './body.ts';
import { isoDate, optionalString, requireId } from './identity.ts';
import { sender, type Sample, type SampleRequest, type SenderAdapter, type SenderSource } from './sender.ts';
import { anySignatureMatches, header, hmac, requireSignatureHeader } from './signature.ts';
import type { InboundRequest } from './types.ts';

export const SHOPIFY_SIGNATURE_HEADERS = ['x-shopify-hmac-sha256', 'shopify-hmac-sha256'] as const;

/** Base64 HMAC-SHA256 of the body; shared with shopify-flow, whose action requests are signed the same way. */
export const shopifySignature = (secret: string, body: string | Uint8Array) => hmac('sha256', secret, 'base64', body);

export function verifyShopifyHmac(request: InboundRequest, secrets: readonly string[]): void {
  const signature = requireSignatureHeader(request.headers, 'X-Shopify-Hmac-Sha256', 'shopify-hmac-sha256');
  const sign = (secret: string) => shopifySignature(secret, request.body);
  if (!anySignatureMatches(secrets, sign, [signature], 'base64')) {
    throw new SignatureError(
      'X-Shopify-Hmac-Sha256 does not match the body under any configured secret (the app\'s API secret key)',
    );
  }
}

/** Looks a Shopify header up under both its prefixed and its newer unprefixed name. */
function shopifyHeader(headers: Headers, name: string): string | null {
  return header(headers, `x-shopify-${name}`, `shopify-${name}`);
}

function adapter({ secrets }: SenderSource): SenderAdapter {
  return {
    ackTimeoutMs: 5000,
    signatureHeaders: SHOPIFY_SIGNATURE_HEADERS,
    verify(request) {
      verifyShopifyHmac(request, secrets);
      if (request.body.length === 0) {
        throw new InputError('malformed_body', 'the body is empty; a Shopify webhook always carries its payload');
      }
      const { headers } = request;
      return {
        deliveryId: requireId(shopifyHeader(headers, 'webhook-id'), 'X-Shopify-Webhook-Id header'),
        eventId: requireId(shopifyHeader(headers, 'event-id'), 'X-Shopify-Event-Id header'),
        topic: optionalString(shopifyHeader(headers, 'topic')),
        occurredAt: isoDate(shopifyHeader(headers, 'triggered-at')),
        json: parseJsonUnlessDeclaredOther(headers, request.body),
      };
    },
  };
}

function sample({ asked, eventId, deliveryId, secret }: SampleRequest): Sample {
  const body = JSON.stringify({ id: Number(eventId) || eventId, email: 'sample@example.com', total_price: '10.00' });
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-shopify-hmac-sha256': shopifySignature(secret, body),
      'x-shopify-webhook-id': deliveryId,
      'x-shopify-event-id': eventId,
      'x-shopify-topic': asked.topic ?? 'orders/create',
      'x-shopify-triggered-at': new Date().toISOString(),
    },
  };
}

export const shopify = sender({ name: 'shopify', adapter, sample });
