import { describe, expect, it } from 'vitest';
import { shopify } from '../../../adapters/shopify.ts';
import {
  SHOPIFY_BODY,
  SHOPIFY_IDS,
  SHOPIFY_SECRET,
  expectInputError,
  expectSignatureError,
  shopifyRequest,
  withAlteredByte,
  withHeader,
  withOddCaseHeaderNames,
} from './fixtures.ts';

const adapter = shopify.adapter({ secrets: [SHOPIFY_SECRET] });

describe('shopify adapter', () => {
  it('accepts a signed webhook and names its delivery, event and topic from the headers', () => {
    expect(adapter.verify(shopifyRequest())).toEqual({
      deliveryId: SHOPIFY_IDS.webhookId,
      eventId: SHOPIFY_IDS.eventId,
      topic: SHOPIFY_IDS.topic,
      occurredAt: new Date(SHOPIFY_IDS.triggeredAt),
      json: JSON.parse(SHOPIFY_BODY),
    });
    expect(adapter).toMatchObject({ name: 'shopify', ackTimeoutMs: 5000 });
    expect(adapter.signatureHeaders).toContain('x-shopify-hmac-sha256');
  });

  it('accepts the unprefixed shopify-* header names', () => {
    expect(adapter.verify(shopifyRequest({ prefix: 'shopify-' }))).toMatchObject({
      deliveryId: SHOPIFY_IDS.webhookId,
      eventId: SHOPIFY_IDS.eventId,
      topic: SHOPIFY_IDS.topic,
    });
  });

  it('accepts header names in any case', () => {
    expect(adapter.verify(withOddCaseHeaderNames(shopifyRequest())).eventId).toBe(SHOPIFY_IDS.eventId);
  });

  it('accepts either secret while one is rotated', () => {
    const rotating = shopify.adapter({ secrets: ['old-secret', 'new-secret'] });
    expect(rotating.verify(shopifyRequest({ secret: 'new-secret' })).eventId).toBe(SHOPIFY_IDS.eventId);
    expect(rotating.verify(shopifyRequest({ secret: 'old-secret' })).eventId).toBe(SHOPIFY_IDS.eventId);
  });

  it('refuses a request signed with another secret, without revealing the secret or the expected HMAC', () => {
    const request = shopifyRequest({ secret: 'someone-else' });
    const message = expectSignatureError(() => adapter.verify(request));
    expect(message).toMatch(/X-Shopify-Hmac-Sha256 does not match/);
    expect(message).not.toContain(SHOPIFY_SECRET);
    expect(message).not.toContain(shopifyRequest().headers.get('x-shopify-hmac-sha256'));
  });

  it('refuses a request without the signature header', () => {
    const message = expectSignatureError(() => adapter.verify(withHeader(shopifyRequest(), 'X-Shopify-Hmac-Sha256', null)));
    expect(message).toMatch(/missing X-Shopify-Hmac-Sha256/);
  });

  it('refuses a body altered by one byte', () => {
    expectSignatureError(() => adapter.verify(withAlteredByte(shopifyRequest())));
  });

  it('refuses a signed empty body with 400', () => {
    expectInputError(() => adapter.verify(shopifyRequest({ body: '' })), 'malformed_body');
  });

  it('refuses a signed body that is not the JSON it declares', () => {
    expectInputError(() => adapter.verify(shopifyRequest({ body: '{"id": 1' })), 'malformed_body');
  });

  it('keeps a body declared as XML as bytes, with json undefined', () => {
    const request = withHeader(shopifyRequest({ body: '<order><id>1</id></order>' }), 'Content-Type', 'application/xml');
    expect(adapter.verify(request)).toMatchObject({ eventId: SHOPIFY_IDS.eventId, json: undefined });
  });

  it('refuses a verified webhook without X-Shopify-Event-Id with 400 naming the header', () => {
    const message = expectInputError(
      () => adapter.verify(withHeader(shopifyRequest(), 'X-Shopify-Event-Id', null)),
      'missing_identity',
    );
    expect(message).toMatch(/X-Shopify-Event-Id/);
  });

  it('refuses a verified webhook without X-Shopify-Webhook-Id with 400', () => {
    expectInputError(() => adapter.verify(withHeader(shopifyRequest(), 'X-Shopify-Webhook-Id', null)), 'missing_identity');
  });

  it('refuses an identity longer than 255 characters', () => {
    const request = withHeader(shopifyRequest(), 'X-Shopify-Event-Id', 'e'.repeat(256));
    expectInputError(() => adapter.verify(request), 'invalid_identity');
  });

  it('leaves occurredAt null when Triggered-At is absent or unreadable', () => {
    expect(adapter.verify(withHeader(shopifyRequest(), 'X-Shopify-Triggered-At', null)).occurredAt).toBeNull();
    expect(adapter.verify(withHeader(shopifyRequest(), 'X-Shopify-Triggered-At', 'yesterday')).occurredAt).toBeNull();
  });
});
