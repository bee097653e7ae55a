import { describe, expect, it } from 'vitest';
import { woocommerce } from '../../../adapters/woocommerce.ts';
import type { Delivery } from '../../support/deliveries.ts';
import { woocommerceDelivery } from '../../support/signers.ts';
import { expectInputError, expectSignatureError, inbound, withHeader } from './fixtures.ts';

const SECRET = 'wc-webhook-secret-for-tests';
const adapter = woocommerce.adapter({ secrets: [SECRET] });
const request = ({ headers, body }: Delivery) => inbound(headers, body);

// An order as the REST API (and so the webhook) shows one.
const ORDER = { id: 1234, status: 'processing', total: '29.35', date_created_gmt: '2024-05-01T11:58:00', date_modified_gmt: '2024-05-01T11:59:30', line_items: [] };

describe('woocommerce adapter', () => {
  it("checks base64_encode(hash_hmac('sha256', body, secret, true)), as WC_Webhook::generate_signature signs", () => {
    // WooCommerce publishes no example, and no npm library signs for it: RFC 4231's HMAC-SHA256 test case 2
    // (key "Jefe"), base64 as PHP's base64_encode writes it. It verifies, and only then is its body found not JSON.
    const rfc4231 = inbound({ 'x-wc-webhook-signature': 'W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM=', 'x-wc-webhook-topic': 'order.created' }, 'what do ya want for nothing?');
    expectInputError(() => woocommerce.adapter({ secrets: ['Jefe'] }).verify(rfc4231), 'malformed_body');
    expectSignatureError(() => woocommerce.adapter({ secrets: ['jefe'] }).verify(rfc4231));
  });

  it('names the event by its topic, resource and modification time, and the delivery by its webhook and event', () => {
    expect(adapter.verify(request(woocommerceDelivery(SECRET, 'order.updated', ORDER)))).toEqual({
      deliveryId: '7:order.updated:1234:2024-05-01T11:59:30',
      eventId: 'order.updated:1234:2024-05-01T11:59:30',
      topic: 'order.updated',
      // The _gmt dates are UTC without a zone.
      occurredAt: new Date('2024-05-01T11:59:30Z'),
      json: ORDER,
    });
    expect(adapter).toMatchObject({ ackTimeoutMs: 60_000, signatureHeaders: ['x-wc-webhook-signature'] });
  });

  it("does not name a delivery by X-WC-Webhook-Delivery-ID, which every delivery of one webhook within a second shares", () => {
    const first = woocommerceDelivery(SECRET, 'order.created', { ...ORDER, id: 1 });
    const second = woocommerceDelivery(SECRET, 'order.created', { ...ORDER, id: 2 });
    second.headers['x-wc-webhook-delivery-id'] = first.headers['x-wc-webhook-delivery-id']!;
    expect(adapter.verify(request(first)).deliveryId).not.toBe(adapter.verify(request(second)).deliveryId);
  });

  it('makes one event of two webhooks of the shop delivering one order state, and another of its next state', () => {
    const one = adapter.verify(request(woocommerceDelivery(SECRET, 'order.updated', ORDER, '7')));
    const other = adapter.verify(request(woocommerceDelivery(SECRET, 'order.updated', ORDER, '8')));
    const next = adapter.verify(request(woocommerceDelivery(SECRET, 'order.updated', { ...ORDER, status: 'completed', date_modified_gmt: '2024-05-01T12:04:00' })));
    expect(one.eventId).toBe(other.eventId);
    expect(one.deliveryId).not.toBe(other.deliveryId);
    expect(next.eventId).not.toBe(one.eventId);
  });

  it('names a deleted resource by its id alone, and a body with no id (an action.* topic) by its hash', () => {
    expect(adapter.verify(request(woocommerceDelivery(SECRET, 'product.deleted', { id: 55 }))).eventId).toBe('product.deleted:55');
    const action = adapter.verify(request(woocommerceDelivery(SECRET, 'action.woocommerce_add_to_cart', { action: 'woocommerce_add_to_cart', arg: 'c4ca4238' })));
    expect(action.eventId).toMatch(/^action\.woocommerce_add_to_cart:sha256:[0-9a-f]{32}$/);
  });

  it('answers the activation ping, unsigned as WooCommerce sends it, as a handshake marked unsigned', () => {
    const identity = adapter.verify(inbound({ 'content-type': 'application/x-www-form-urlencoded' }, 'webhook_id=42'));
    expect(identity.handshake).toEqual({ status: 200, contentType: 'application/json', body: '{"webhook_id":"42"}' });
    expect(identity.topic).toBe('ping');
    // Nothing in it is signed: ingest answers it and records nothing.
    expect(identity.unsigned).toBe(true);
    expect(adapter.verify(request(woocommerceDelivery(SECRET, 'order.created', ORDER))).unsigned).toBeUndefined();
    // Anything else without a signature is refused, and a "ping" that carries one is verified like any delivery.
    expect(expectSignatureError(() => adapter.verify(inbound({}, 'webhook_id=42&x=1')))).toMatch(/missing X-WC-Webhook-Signature/);
    expectSignatureError(() => adapter.verify(inbound({ 'x-wc-webhook-signature': 'AAAA' }, 'webhook_id=42')));
  });

  it('refuses a wrong secret, a tampered body and a missing signature, saying which; and a delivery without its topic', () => {
    const delivery = woocommerceDelivery(SECRET, 'order.created', ORDER);
    expect(expectSignatureError(() => woocommerce.adapter({ secrets: ['wrong'] }).verify(request(delivery)))).toMatch(/does not match the body/);
    expectSignatureError(() => adapter.verify(request({ ...delivery, body: delivery.body.replace('29.35', '0.01') })));
    expect(expectSignatureError(() => adapter.verify(withHeader(request(delivery), 'x-wc-webhook-signature', null)))).toMatch(/missing X-WC-Webhook-Signature/);
    expectInputError(() => adapter.verify(withHeader(request(delivery), 'x-wc-webhook-topic', null)), 'missing_identity');
    expect(woocommerce.adapter({ secrets: ['old', SECRET] }).verify(request(delivery)).topic).toBe('order.created');
  });
});
