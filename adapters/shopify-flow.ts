/**
 * Shopify Flow action requests: signed like Shopify webhooks, but with no webhook or event headers. Flow
 * times out after 10 s and resends the same body, so the run ID names the event and a hash of the exact
 * bytes names the delivery: an identical resend is recognised as the same delivery.
 */
import { jsonPointer } from '../src/json-pointer.ts';
import { parseJson } from './body.ts';
import { optionalString, stringId } from './identity.ts';
import { SHOPIFY_SIGNATURE_HEADERS, verifyShopifyHmac } from './shopify.ts';
import { sha256Hex } from './signature.ts';
import type { Adapter } from './types.ts';

export function shopifyFlow({ secrets }: { secrets: readonly string[] }): Adapter {
  return {
    name: 'shopify-flow',
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
