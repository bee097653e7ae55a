import { Paddle } from '@paddle/paddle-node-sdk';
import { describe, expect, it } from 'vitest';
import { paddle } from '../../../adapters/paddle.ts';
import { paddleDelivery } from '../../support/signers.ts';
import { expectInputError, expectSignatureError, inbound, secondsFrom, withHeader, withNow } from './fixtures.ts';

const SECRET = 'pdl_ntfset_01hkz0000000000000000000_testsecret';
const adapter = paddle.adapter({ secrets: [SECRET] });
const NOW = new Date('2026-03-02T10:00:00Z');

// A subscription.created notification, shaped as Paddle Billing's docs show one.
const EVENT = {
  event_id: 'evt_01hv8x2acma2gz3he0mbvpsvbn',
  event_type: 'subscription.created',
  occurred_at: '2026-03-02T09:59:59.512339Z',
  notification_id: 'ntf_01hv8x2af20fgcsk6sm55h7ggm',
  data: { id: 'sub_01hv8x29kz0t586xy6zn1a62ny', status: 'active' },
};

const request = (payload: object = EVENT, at = NOW, secret = SECRET) => {
  const { body, headers } = paddleDelivery(secret, payload, at);
  return inbound(headers, body, at);
};

describe('paddle adapter', () => {
  it("accepts what Paddle's own SDK verifies, naming the notification as the delivery and the event as the event", async () => {
    const now = new Date();
    const { body, headers } = paddleDelivery(SECRET, EVENT, now);
    // The SDK's check (it reads the clock itself: signed just now); a Paddle client sets up its runtime.
    const { webhooks } = new Paddle('pdl_sdbx_apikey_for_tests_only');
    expect(await webhooks.isSignatureValid(body, SECRET, headers['paddle-signature']!)).toBe(true);
    expect(await webhooks.isSignatureValid(body, 'pdl_ntfset_wrong', headers['paddle-signature']!)).toBe(false);
    expect(adapter.verify(inbound(headers, body, now))).toEqual({
      deliveryId: 'ntf_01hv8x2af20fgcsk6sm55h7ggm',
      eventId: 'evt_01hv8x2acma2gz3he0mbvpsvbn',
      topic: 'subscription.created',
      occurredAt: new Date('2026-03-02T09:59:59.512Z'),
      json: EVENT,
    });
    expect(adapter).toMatchObject({ ackTimeoutMs: 5000, signatureHeaders: ['paddle-signature'] });
  });

  it("keeps the SDK's five seconds, in both directions", () => {
    expect(adapter.verify(withNow(request(), secondsFrom(NOW, 5))).eventId).toBe(EVENT.event_id);
    expect(expectSignatureError(() => adapter.verify(withNow(request(), secondsFrom(NOW, 6))))).toMatch(/6 s old, more than the 5 s allowed/);
    expect(expectSignatureError(() => adapter.verify(withNow(request(), secondsFrom(NOW, -6))))).toMatch(/6 s in the future/);
  });

  it('tries every h1, as Paddle sends two while a secret is rotated', () => {
    const signed = request();
    const header = signed.headers.get('paddle-signature')!.replace(';h1=', ';h1=00ff;h1=');
    expect(adapter.verify(withHeader(signed, 'paddle-signature', header)).eventId).toBe(EVENT.event_id);
    expect(paddle.adapter({ secrets: ['pdl_ntfset_old', SECRET] }).verify(request()).eventId).toBe(EVENT.event_id);
  });

  it('refuses a wrong secret, a tampered body, a missing or malformed header, saying which', () => {
    expect(expectSignatureError(() => adapter.verify(request(EVENT, NOW, 'pdl_ntfset_wrong')))).toMatch(/no h1 in Paddle-Signature matches/);
    const signed = request();
    expectSignatureError(() => adapter.verify({ ...signed, body: Buffer.from(JSON.stringify({ ...EVENT, event_type: 'subscription.canceled' })) }));
    expect(expectSignatureError(() => adapter.verify(withHeader(signed, 'paddle-signature', null)))).toMatch(/missing Paddle-Signature/);
    expect(expectSignatureError(() => adapter.verify(withHeader(signed, 'paddle-signature', 'h1=abc')))).toMatch(/no ts=/);
    expect(expectSignatureError(() => adapter.verify(withHeader(signed, 'paddle-signature', `ts=${Math.floor(NOW.getTime() / 1000)}`)))).toMatch(/no h1=/);
  });

  it('takes the event as the delivery when a body has no notification_id, and refuses one without its event_id', () => {
    const { notification_id: _, ...bare } = EVENT;
    expect(adapter.verify(request(bare)).deliveryId).toBe(EVENT.event_id);
    const { event_id: __, ...anonymous } = EVENT;
    expectInputError(() => adapter.verify(request(anonymous)), 'missing_identity');
  });
});
