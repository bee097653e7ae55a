import { WebhooksHelper } from 'square';
import { describe, expect, it } from 'vitest';
import { square } from '../../../adapters/square.ts';
import type { InboundRequest } from '../../../adapters/types.ts';
import type { Delivery } from '../../support/deliveries.ts';
import { squareDelivery } from '../../support/signers.ts';
import { expectInputError, expectSignatureError, inbound, withHeader } from './fixtures.ts';

// The vector every Square SDK tests its WebhooksHelper with.
const PUBLISHED = {
  body: '{"merchant_id":"MLEFBHHSJGVHD","type":"webhooks.test_notification","event_id":"ac3ac95b-f97d-458c-a6e6-18981597e05f","created_at":"2022-07-13T20:30:59.037339943Z","data":{"type":"webhooks","id":"bc368e64-01aa-407e-b46e-3231809b1129"}}',
  signature: 'GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4=',
  key: 'Ibxx_5AKakO-3qeNVR61Dw',
  origin: 'https://webhook.site',
  path: '/679a4f3a-dcfa-49ee-bac5-9d0edad886b9',
};

const KEY = 'square-signature-key-for-tests';
const PUBLIC = 'https://hooks.example.com';
const PATH = '/in/square';
const adapter = square.adapter({ secrets: [KEY], publicUrl: PUBLIC });
const request = ({ body, headers }: Delivery, target = PATH): InboundRequest => ({ ...inbound(headers, body), target });

const PAYMENT = { merchant_id: 'ML1', type: 'payment.updated', event_id: 'f2d5b3c4-0000-4000-8000-000000000001', created_at: '2024-05-01T11:59:58.000Z', data: { type: 'payment', id: 'pay_1', object: {} } };

describe('square adapter', () => {
  it("verifies Square's published example, and names the delivery and event by its event_id", async () => {
    expect(await WebhooksHelper.verifySignature({ requestBody: PUBLISHED.body, signatureHeader: PUBLISHED.signature, signatureKey: PUBLISHED.key, notificationUrl: PUBLISHED.origin + PUBLISHED.path })).toBe(true);
    const identity = square.adapter({ secrets: [PUBLISHED.key], publicUrl: PUBLISHED.origin }).verify(
      request({ body: PUBLISHED.body, headers: { 'content-type': 'application/json', 'x-square-hmacsha256-signature': PUBLISHED.signature } }, PUBLISHED.path),
    );
    expect(identity).toEqual({
      deliveryId: 'ac3ac95b-f97d-458c-a6e6-18981597e05f',
      eventId: 'ac3ac95b-f97d-458c-a6e6-18981597e05f',
      topic: 'webhooks.test_notification',
      occurredAt: new Date('2022-07-13T20:30:59.037Z'),
      json: JSON.parse(PUBLISHED.body),
    });
    expect(adapter).toMatchObject({ ackTimeoutMs: 10_000 });
  });

  it("accepts what Square's own verifier accepts, with the query string the subscription's URL has", async () => {
    const url = `${PUBLIC}${PATH}?location=main`;
    const delivery = squareDelivery(KEY, url, PAYMENT);
    expect(await WebhooksHelper.verifySignature({ requestBody: delivery.body, signatureHeader: delivery.headers['x-square-hmacsha256-signature']!, signatureKey: KEY, notificationUrl: url })).toBe(true);
    expect(adapter.verify(request(delivery, `${PATH}?location=main`))).toMatchObject({ eventId: PAYMENT.event_id, topic: 'payment.updated' });
    // The same notification called at another path or query is not the URL Square signed.
    expectSignatureError(() => adapter.verify(request(delivery)));
  });

  it('refuses a wrong key, another public URL, a tampered body and a missing signature, saying which', () => {
    const delivery = squareDelivery(KEY, PUBLIC + PATH, PAYMENT);
    expect(expectSignatureError(() => square.adapter({ secrets: ['wrong'], publicUrl: PUBLIC }).verify(request(delivery)))).toMatch(/does not match the notification URL and body/);
    expectSignatureError(() => square.adapter({ secrets: [KEY], publicUrl: 'https://elsewhere.example.com' }).verify(request(delivery)));
    expectSignatureError(() => adapter.verify(request({ ...delivery, body: delivery.body.replace('pay_1', 'pay_2') })));
    expect(expectSignatureError(() => adapter.verify(withHeader(request(delivery), 'x-square-hmacsha256-signature', null)))).toMatch(/missing x-square-hmacsha256-signature/);
    const legacy = withHeader(withHeader(request(delivery), 'x-square-hmacsha256-signature', null), 'x-square-signature', 'abc=');
    expect(expectSignatureError(() => adapter.verify(legacy))).toMatch(/only the SHA-1 x-square-signature/);
  });

  it('refuses a verified notification without its event_id', () => {
    const { event_id: _, ...rest } = PAYMENT;
    expectInputError(() => adapter.verify(request(squareDelivery(KEY, PUBLIC + PATH, rest))), 'missing_identity');
  });

  it('needs the public URL it signs', () => {
    expect(() => square.adapter({ secrets: [KEY], publicUrl: undefined })).toThrow(/publicUrl/);
  });
});
