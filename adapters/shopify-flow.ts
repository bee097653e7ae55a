/**
 * Shopify Flow action requests: signed like Shopify webhooks, but with no webhook or event headers. Flow
 * times out after 10 s and resends the same body, so the run ID names the event and a hash of the exact
 * bytes names the delivery: an identical resend is recognised as the same delivery.
 */
import { jsonPointer } from '../src/json-pointer.ts';
import { parseJson } from './body.ts';
import { optionalString, stringId } from './identity.ts';
import { sender, type Sample, type SampleRequest, type SenderAdapter, type SenderSource } from './sender.ts';
import { SHOPIFY_SIGNATURE_HEADERS, shopifySignature, verifyShopifyHmac } from './shopify.ts';
import { sha256Hex } from './signature.ts';

function adapter({ secrets }: SenderSource): SenderAdapter {
  return {
    ackTimeoutMs: 10_000,
    signatureHeaders: SHOPIFY_SIGNATURE_HEADERS,
    verify(request) {
      verifyShopifyHmac(request, secrets);
      const json = parseJson(request.body);
      return {
        deliveryId: `flow-${sha256Hex(request.body).slice(0, 32)}`,
        eventId: stringId(jsonPointer(json, '/action_run_id'), 'action_run_id in the body'),
        topic: optionalString(jsonPointer(json, '/handle')),
        occurredAt: null,
        json,
      };
    },
  };
}

function sample({ asked, eventId, secret }: SampleRequest): Sample {
  const body = JSON.stringify({ action_run_id: eventId, handle: asked.topic ?? 'sample-action', properties: {} });
  return { body, headers: { 'content-type': 'application/json', 'x-shopify-hmac-sha256': shopifySignature(secret, body) } };
}

export const shopifyFlow = sender({ name: 'shopify-flow', namedByEvent: true, adapter, sample });
