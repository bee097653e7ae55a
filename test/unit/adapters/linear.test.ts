import { createHmac } from 'node:crypto';
import { LinearWebhookClient } from '@linear/sdk/webhooks';
import { describe, expect, it } from 'vitest';
import { linear } from '../../../adapters/linear.ts';
import { linearDelivery } from '../../support/signers.ts';
import { expectInputError, expectSignatureError, inbound, withAlteredByte, withHeader } from './fixtures.ts';

const SECRET = 'lin_wh_0123456789abcdef';
const adapter = linear.adapter({ secrets: [SECRET] });
// The shape of Linear's documented payload ("The webhook payload").
const UPDATE = {
  action: 'update',
  type: 'Issue',
  createdAt: '2026-05-01T12:00:00.000Z',
  organizationId: '8f1b2c3d-0000-4000-8000-000000000001',
  webhookId: '3c5a7e9b-0000-4000-8000-000000000002',
  url: 'https://linear.app/acme/issue/ENG-1',
  data: { id: '2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9', title: 'Checkout fails', updatedAt: '2026-05-01T12:00:00.000Z' },
  updatedFrom: { title: 'Checkout fail' },
};
const DELIVERY = '234d1a4e-b617-4388-90fe-adc3633d6b72';

const request = (delivery: { headers: Record<string, string>; body: string }, now = new Date()) => inbound(delivery.headers, delivery.body, now);

describe('linear adapter', () => {
  it("accepts what @linear/sdk's LinearWebhookClient accepts, and names the change by its entity and time", () => {
    const delivery = linearDelivery(SECRET, UPDATE, DELIVERY);
    const client = new LinearWebhookClient(SECRET);
    expect(client.verify(Buffer.from(delivery.body), delivery.headers['linear-signature']!)).toBe(true);
    expect(adapter.verify(request(delivery))).toEqual({
      deliveryId: DELIVERY,
      eventId: 'Issue:update:2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9:2026-05-01T12:00:00.000Z',
      topic: 'Issue.update',
      occurredAt: new Date('2026-05-01T12:00:00.000Z'),
      json: JSON.parse(delivery.body),
    });
    expect(adapter).toMatchObject({ ackTimeoutMs: 5000, signatureHeaders: ['linear-signature'] });
  });

  it('refuses what the SDK refuses: another secret, a tampered body', () => {
    const delivery = linearDelivery('another secret', UPDATE, DELIVERY);
    expect(() => new LinearWebhookClient(SECRET).verify(Buffer.from(delivery.body), delivery.headers['linear-signature']!)).toThrow();
    expect(expectSignatureError(() => adapter.verify(request(delivery)))).toMatch(/Linear-Signature does not match/);
    expectSignatureError(() => adapter.verify(withAlteredByte(request(linearDelivery(SECRET, UPDATE, DELIVERY)))));
  });

  it('gives a retry, signed again at a new webhookTimestamp under a new delivery, the same event', () => {
    const first = adapter.verify(request(linearDelivery(SECRET, UPDATE, DELIVERY)));
    const retry = adapter.verify(request(linearDelivery(SECRET, UPDATE, 'c9d2a4f1-0000-4000-8000-000000000003', Date.now() + 1000)));
    expect(retry.eventId).toBe(first.eventId);
    // A second update of the same issue is another event.
    const later = adapter.verify(request(linearDelivery(SECRET, { ...UPDATE, createdAt: '2026-05-01T12:05:00.000Z' }, DELIVERY)));
    expect(later.eventId).not.toBe(first.eventId);
  });

  it('refuses a webhookTimestamp more than a minute off, either way, or none, as the SDK does', () => {
    const at = Date.now();
    const delivery = linearDelivery(SECRET, UPDATE, DELIVERY, at);
    expect(adapter.verify(request(delivery, new Date(at + 60_000))).eventId).toMatch(/^Issue:update:/);
    expect(expectSignatureError(() => adapter.verify(request(delivery, new Date(at + 61_000))))).toMatch(/webhookTimestamp is 61 s old/);
    expect(expectSignatureError(() => adapter.verify(request(delivery, new Date(at - 61_000))))).toMatch(/61 s in the future/);
    const early = linearDelivery(SECRET, UPDATE, DELIVERY, at - 61_000);
    expect(() => new LinearWebhookClient(SECRET).verify(Buffer.from(early.body), early.headers['linear-signature']!)).toThrow(/timestamp/);
    // Signed, but with no webhookTimestamp: its age cannot be told.
    const unstamped = JSON.stringify(UPDATE);
    const headers = { 'linear-signature': createHmac('sha256', SECRET).update(unstamped).digest('hex'), 'linear-delivery': DELIVERY };
    expect(expectSignatureError(() => adapter.verify(inbound(headers, unstamped)))).toMatch(/webhookTimestamp is missing/);
  });

  it('refuses a request without its signature, and a verified one without its delivery header', () => {
    const delivery = request(linearDelivery(SECRET, UPDATE, DELIVERY));
    expect(expectSignatureError(() => adapter.verify(withHeader(delivery, 'linear-signature', null)))).toMatch(/missing Linear-Signature/);
    expectInputError(() => adapter.verify(withHeader(delivery, 'linear-delivery', null)), 'missing_identity');
  });

  it('names a payload about no entity by its delivery', () => {
    const revoked = { action: 'revoked', type: 'OAuthApp', createdAt: '2026-05-01T12:00:00.000Z', organizationId: 'o', oauthClientId: 'c' };
    expect(adapter.verify(request(linearDelivery(SECRET, revoked, DELIVERY)))).toMatchObject({ deliveryId: DELIVERY, eventId: DELIVERY, topic: 'OAuthApp.revoked' });
  });
});
