/**
 * The twilio, square, paddle and woocommerce adapters through the real server on both engines: a form-encoded
 * Twilio delivery reaching filters and transforms as JSON while its task forwards the form's bytes, URLs signed
 * against `publicUrl`, each sender's retry deduplicated, and WooCommerce's unsigned ping answered.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminApi } from '../support/admin.ts';
import { post, type Delivery } from '../support/deliveries.ts';
import type { Downstream } from '../support/downstream.ts';
import { engine } from '../support/engine.ts';
import { taskIn } from '../support/forwarding.ts';
import type { TestGateway } from '../support/gateway.ts';
import { startSenderGateway } from '../support/sender-gateway.ts';
import { paddleDelivery, squareDelivery, twilioDelivery, woocommerceDelivery } from '../support/signers.ts';

const PUBLIC = 'https://hooks.example.com';
const TWILIO_TOKEN = 'twilio-auth-token-for-tests';
const SQUARE_KEY = 'square-signature-key-for-tests';
const PADDLE_SECRET = 'pdl_ntfset_for_tests';
const WC_SECRET = 'wc-secret-for-tests';
let gateway: TestGateway;
let downstream: Downstream;

beforeAll(async () => {
  ({ gateway, downstream } = await startSenderGateway((action) => ({
    sms: {
      adapter: 'twilio',
      secrets: [TWILIO_TOKEN],
      publicUrl: PUBLIC,
      actions: {
        inbox: { ...action('/inbox'), idempotency: 'key', filter: { body: { SmsStatus: 'received', Body: { $startsWith: 'ORDER' } } } },
        failures: { ...action('/failures'), filter: { body: { MessageStatus: { $in: ['failed', 'undelivered'] } } } },
        crm: { ...action('/crm'), filter: { body: { SmsStatus: 'received' } }, transform: '{"from": From, "text": Body, "sid": MessageSid}' },
      },
    },
    pos: { adapter: 'square', secrets: [SQUARE_KEY], publicUrl: PUBLIC, actions: { ledger: action('/ledger') } },
    billing: { adapter: 'paddle', secrets: [PADDLE_SECRET], actions: { access: action('/access') } },
    store: { adapter: 'woocommerce', secrets: [WC_SECRET], actions: { fulfil: { ...action('/fulfil'), topics: ['order.created'] } } },
  })));
});
afterAll(async () => {
  await gateway?.close();
  await downstream?.close();
});

const api = () => adminApi(gateway.url);
const INBOUND = { AccountSid: 'AC00000000000000000000000000000001', Body: 'ORDER 42 please', From: '+15005550006', MessageSid: 'SM00000000000000000000000000000042', SmsSid: 'SM00000000000000000000000000000042', SmsStatus: 'received', To: '+15005550001' };

describe(`twilio through the server (${engine()})`, () => {
  it("accepts a form-encoded delivery signed over publicUrl and the path, its filter reading a form field, its task forwarding the form's bytes", async () => {
    const delivery = twilioDelivery(TWILIO_TOKEN, `${PUBLIC}/in/sms`, INBOUND, { 'i-twilio-idempotency-token': 'idem-42' });
    const first = await post(gateway.url, 'sms', delivery);
    expect(first.status, JSON.stringify(first.json)).toBe(200);
    expect(first.json).toMatchObject({ decision: 'accepted', deliveryId: 'idem-42', eventId: 'SM00000000000000000000000000000042:received' });
    expect(first.json.tasks.map((t: any) => t.action).sort()).toEqual(['crm', 'inbox']);
    const view = (await api()(`/api/deliveries/${first.json.receipt}`)).json;
    expect(view.skipped).toEqual([{ action: 'failures', reason: 'filtered', detail: expect.stringMatching(/^body\.MessageStatus/) }]);

    const inbox = first.json.tasks.find((t: any) => t.action === 'inbox').id;
    await taskIn(gateway.store.db, inbox, 'succeeded');
    const [sent] = downstream.requests('/inbox');
    expect(sent!.body.toString()).toBe(delivery.body);
    expect(sent!.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(sent!.headers['idempotency-key']).toBe(inbox);

    // The transform read the form as JSON.
    await taskIn(gateway.store.db, first.json.tasks.find((t: any) => t.action === 'crm').id, 'succeeded');
    expect(JSON.parse(downstream.requests('/crm')[0]!.body.toString())).toEqual({ from: '+15005550006', text: 'ORDER 42 please', sid: 'SM00000000000000000000000000000042' });
  });

  it("deduplicates Twilio's retry of the delivery, and the same event under another token", async () => {
    const params = { ...INBOUND, MessageSid: 'SM00000000000000000000000000000043', SmsSid: 'SM00000000000000000000000000000043' };
    const delivery = twilioDelivery(TWILIO_TOKEN, `${PUBLIC}/in/sms`, params, { 'i-twilio-idempotency-token': 'idem-43' });
    const first = await post(gateway.url, 'sms', delivery);
    expect(first.json.decision).toBe('accepted');
    const retry = await post(gateway.url, 'sms', delivery);
    expect(retry.json).toMatchObject({ decision: 'duplicate_delivery', firstSeen: { receipt: first.json.receipt } });
    const replayed = await post(gateway.url, 'sms', { ...delivery, headers: { ...delivery.headers, 'i-twilio-idempotency-token': 'idem-forged' } });
    expect(replayed.json.decision).toBe('duplicate_event');
    // One task, so one effect, however many times the message arrived.
    await taskIn(gateway.store.db, first.json.tasks.find((t: any) => t.action === 'inbox').id, 'succeeded');
    expect(downstream.effects('/inbox').filter((e) => e.body.toString().includes('000043'))).toHaveLength(1);
  });

  it("makes each status of one message its own event, and a failure's task only for the action that filters on it", async () => {
    const status = (MessageStatus: string) => ({ AccountSid: 'AC1', MessageSid: 'SM00000000000000000000000000000044', MessageStatus, SmsStatus: MessageStatus });
    const sent = await post(gateway.url, 'sms', twilioDelivery(TWILIO_TOKEN, `${PUBLIC}/in/sms`, status('sent')));
    const failed = await post(gateway.url, 'sms', twilioDelivery(TWILIO_TOKEN, `${PUBLIC}/in/sms`, status('failed')));
    expect([sent.json.decision, sent.json.tasks]).toEqual(['accepted', []]);
    expect(failed.json.decision).toBe('accepted');
    expect(failed.json.tasks.map((t: any) => t.action)).toEqual(['failures']);
  });

  it('refuses a delivery signed for another URL or with another token: 401, nothing recorded', async () => {
    const before = (await api()('/api/deliveries?source=sms&limit=100')).json.items.length;
    for (const delivery of [twilioDelivery(TWILIO_TOKEN, `${PUBLIC}/in/sms-old`, INBOUND), twilioDelivery('another-token', `${PUBLIC}/in/sms`, INBOUND)]) {
      const answer = await post(gateway.url, 'sms', delivery);
      expect(answer.status).toBe(401);
      expect(answer.json.error.message).toMatch(/X-Twilio-Signature does not match/);
    }
    expect((await api()('/api/deliveries?source=sms&limit=100')).json.items).toHaveLength(before);
  });
});

describe(`square, paddle and woocommerce through the server (${engine()})`, () => {
  it("deduplicates Square's retry by its event_id", async () => {
    const delivery = squareDelivery(SQUARE_KEY, `${PUBLIC}/in/pos`, { merchant_id: 'ML1', type: 'payment.updated', event_id: 'sq-evt-1', created_at: '2024-05-01T11:59:58Z', data: {} });
    expect((await post(gateway.url, 'pos', delivery)).json).toMatchObject({ decision: 'accepted', eventId: 'sq-evt-1' });
    const retry: Delivery = { ...delivery, headers: { ...delivery.headers, 'square-retry-number': '1', 'square-retry-reason': 'http_error' } };
    expect((await post(gateway.url, 'pos', retry)).json.decision).toBe('duplicate_delivery');
  });

  it("deduplicates Paddle's retry of a notification, and a second destination's notification of the event", async () => {
    const event = { event_id: 'evt_int_1', event_type: 'subscription.created', occurred_at: new Date().toISOString(), data: {} };
    const first = await post(gateway.url, 'billing', paddleDelivery(PADDLE_SECRET, { ...event, notification_id: 'ntf_a' }));
    expect(first.json).toMatchObject({ decision: 'accepted', deliveryId: 'ntf_a', eventId: 'evt_int_1' });
    // A retry is signed again, at its own ts.
    expect((await post(gateway.url, 'billing', paddleDelivery(PADDLE_SECRET, { ...event, notification_id: 'ntf_a' }))).json.decision).toBe('duplicate_delivery');
    expect((await post(gateway.url, 'billing', paddleDelivery(PADDLE_SECRET, { ...event, notification_id: 'ntf_b' }))).json.decision).toBe('duplicate_event');
    const stale = await post(gateway.url, 'billing', paddleDelivery(PADDLE_SECRET, { ...event, notification_id: 'ntf_c' }, new Date(Date.now() - 60_000)));
    expect(stale.status).toBe(401);
  });

  it("answers WooCommerce's unsigned ping 200 and counts it, recording nothing, then takes its orders, one event per order state", async () => {
    const ping = await fetch(`${gateway.url}/in/store`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'webhook_id=7' });
    expect(ping.status).toBe(200);
    expect(await ping.json()).toEqual({ webhook_id: '7' });
    expect((await api()('/api/deliveries?source=store')).json.items).toEqual([]);
    const scrape = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(scrape).toMatch(/^oncehook_rejections_total\{source="store",reason="unsigned_ping"\} 1$/m);

    const order = { id: 1234, status: 'processing', date_created_gmt: '2024-05-01T11:58:00', date_modified_gmt: '2024-05-01T11:58:00' };
    const created = await post(gateway.url, 'store', woocommerceDelivery(WC_SECRET, 'order.created', order, '7'));
    expect(created.json).toMatchObject({ decision: 'accepted', eventId: 'order.created:1234:2024-05-01T11:58:00' });
    expect(created.json.tasks.map((t: any) => t.action)).toEqual(['fulfil']);
    // A second webhook of the shop on the same topic delivers the same event.
    expect((await post(gateway.url, 'store', woocommerceDelivery(WC_SECRET, 'order.created', order, '8'))).json.decision).toBe('duplicate_event');
    const updated = await post(gateway.url, 'store', woocommerceDelivery(WC_SECRET, 'order.updated', { ...order, status: 'completed', date_modified_gmt: '2024-05-01T12:30:00' }, '9'));
    expect([updated.json.decision, updated.json.tasks]).toEqual(['accepted', []]);
  });
});
