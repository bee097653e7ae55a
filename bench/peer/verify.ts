import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Shopify's check, as the load generator signs (bench/deliveries.ts): base64 HMAC-SHA256 of the raw body with the
 * shared secret, compared in constant time. The bench's source verifies the same header.
 */
export function shopifySignatureValid(body: Uint8Array, header: string | undefined, secret: string): boolean {
  if (!header) return false;
  const expected = createHmac('sha256', secret).update(body).digest();
  const given = Buffer.from(header, 'base64');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
