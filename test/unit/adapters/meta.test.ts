/**
 * Meta publishes no webhook signer on npm (its facebook-nodejs-business-sdk, 33 MB, has none), so these tests use
 * the text-message example of WhatsApp's "messages webhook reference", pinned, with its X-Hub-Signature-256
 * computed by OpenSSL (`openssl dgst -sha256 -hmac`) over the body as sent.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { meta } from '../../../adapters/meta.ts';
import { HttpError } from '../../../src/errors.ts';
import { expectInputError, failedCheck, inbound, thrown, withHeader } from './fixtures.ts';

const SECRET = 'oncehook-test-secret';
const VERIFY_TOKEN = 'meatyhamhock';
const adapter = meta.adapter({ secrets: [SECRET], verifyToken: VERIFY_TOKEN });

const WAMID = 'wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=';
const METADATA = { display_phone_number: '15550783881', phone_number_id: '106540352242922' };
// WhatsApp's example: a text message sent to a business.
const MESSAGE_ENTRY = {
  id: '102290129340398',
  changes: [
    {
      value: {
        messaging_product: 'whatsapp',
        metadata: METADATA,
        contacts: [{ profile: { name: 'Sheena Nelson' }, wa_id: '16505551234' }],
        messages: [{ from: '16505551234', id: WAMID, timestamp: '1749416383', type: 'text', text: { body: 'Does it come in another color?' } }],
      },
      field: 'messages',
    },
  ],
};
const PINNED_SIGNATURE = 'sha256=2b35858e60de6d7bc7339a7011dd4a5dd3a215db125469037564af8caf8ca3c4';

const statusEntry = (status: string, timestamp: string) => ({
  id: '102290129340398',
  changes: [{ value: { messaging_product: 'whatsapp', metadata: METADATA, statuses: [{ id: WAMID, status, timestamp, recipient_id: '16505551234' }] }, field: 'messages' }],
});
const FEED_ENTRY = { id: '1234567890', time: 1749416400, changes: [{ field: 'feed', value: { item: 'comment', verb: 'add', comment_id: '1_2', created_time: 1749416399 } }] };
const MESSAGING_ENTRY = {
  id: '445566',
  time: 1749416401234,
  messaging: [{ sender: { id: 'PSID-1' }, recipient: { id: '445566' }, timestamp: 1749416400987, message: { mid: 'm_abc', text: 'hello' } }],
};

function signed(body: string, secret = SECRET) {
  return inbound({ 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}` }, body);
}
const delivery = (entry: object[], object = 'whatsapp_business_account') => signed(JSON.stringify({ object, entry }));

describe('meta adapter', () => {
  it("verifies WhatsApp's example message, signed as OpenSSL computes it, and names it by its wamid", () => {
    const request = delivery([MESSAGE_ENTRY]);
    expect(request.headers.get('x-hub-signature-256')).toBe(PINNED_SIGNATURE);
    const { items } = adapter.verify(request);
    expect(items).toHaveLength(1);
    const own = { object: 'whatsapp_business_account', entry: [MESSAGE_ENTRY] };
    expect(items![0]).toEqual({
      deliveryId: WAMID,
      eventId: WAMID,
      topic: 'messages',
      occurredAt: new Date(1749416383 * 1000),
      json: own,
      body: Buffer.from(JSON.stringify(own)),
    });
    expect(adapter).toMatchObject({ ackTimeoutMs: 20_000, signatureHeaders: ['x-hub-signature-256', 'x-hub-signature'] });
  });

  it('makes one event per entry, each named as it can be: a wamid with its status, else the hash of its content', () => {
    const entries = [MESSAGE_ENTRY, statusEntry('delivered', '1749416390'), statusEntry('read', '1749416395'), FEED_ENTRY, MESSAGING_ENTRY];
    const { items, deliveryId } = adapter.verify(delivery(entries));
    expect(items!.map((i) => [i.eventId.replace(/^meta-[0-9a-f]{32}$/, 'meta-<hash>'), i.topic, i.occurredAt?.toISOString() ?? null])).toEqual([
      [WAMID, 'messages', '2025-06-08T20:59:43.000Z'],
      [`${WAMID}:delivered`, 'messages', '2025-06-08T20:59:50.000Z'],
      [`${WAMID}:read`, 'messages', '2025-06-08T20:59:55.000Z'],
      ['meta-<hash>', 'feed', null],
      ['meta-<hash>', 'messaging', '2025-06-08T21:00:00.987Z'],
    ]);
    expect(new Set(items!.map((i) => i.eventId)).size).toBe(5);
    expect(deliveryId).toBe(WAMID);
    // Each item's tasks send Meta's shape, with that one entry.
    expect(JSON.parse(Buffer.from(items![3]!.body).toString())).toEqual({ object: 'whatsapp_business_account', entry: [FEED_ENTRY] });
  });

  it("names an entry alike on Meta's retry: stamped at another time, batched with others, serialized afresh", () => {
    const first = adapter.verify(delivery([FEED_ENTRY, MESSAGING_ENTRY])).items!.map((i) => i.eventId);
    const resentFeed = { changes: FEED_ENTRY.changes, time: FEED_ENTRY.time + 60, id: FEED_ENTRY.id };
    const resentMessaging = { ...MESSAGING_ENTRY, time: MESSAGING_ENTRY.time + 60_000 };
    const retried = adapter.verify(delivery([MESSAGE_ENTRY, resentMessaging, resentFeed])).items!.map((i) => i.eventId);
    expect(retried).toEqual([WAMID, first[1], first[0]]);
    // The same change on another Page is another event.
    expect(adapter.verify(delivery([{ ...FEED_ENTRY, id: '999' }])).items![0]!.eventId).not.toBe(first[0]);
  });

  it('verifies over the bytes as sent: Meta escapes non-ASCII text, and a re-serialized body would not match', () => {
    const body = '{"object":"page","entry":[{"id":"1","time":1,"changes":[{"field":"feed","value":{"message":"\\u00e4\\u00f6\\u00e5"}}]}]}';
    const { items } = adapter.verify(signed(body));
    expect(items![0]!.json).toEqual({ object: 'page', entry: [{ id: '1', time: 1, changes: [{ field: 'feed', value: { message: 'äöå' } }] }] });
    const reserialized = { ...signed(body), body: Buffer.from(JSON.stringify(JSON.parse(body))) };
    expect(failedCheck(() => adapter.verify(reserialized))).toBe('signature');
  });

  it('refuses a wrong App Secret, a changed body and a missing or SHA-1-only signature, saying which check failed', () => {
    const request = delivery([MESSAGE_ENTRY]);
    expect(failedCheck(() => meta.adapter({ secrets: ['wrong'], verifyToken: VERIFY_TOKEN }).verify(request))).toBe('signature');
    expect(failedCheck(() => adapter.verify({ ...request, body: Buffer.from(new TextDecoder().decode(request.body).replace('color', 'colour')) }))).toBe('signature');
    expect(failedCheck(() => adapter.verify(withHeader(request, 'x-hub-signature-256', null)))).toBe('missing_header');
    const sha1Only = withHeader(withHeader(request, 'x-hub-signature-256', null), 'x-hub-signature', 'sha1=0123');
    expect(failedCheck(() => adapter.verify(sha1Only))).toBe('missing_header');
  });

  it('refuses a verified body without a list of entries', () => {
    for (const body of ['{"object":"page"}', '{"object":"page","entry":[]}', '{"entry":{}}', '[]']) {
      expectInputError(() => adapter.verify(signed(body)), 'malformed_body');
    }
    expect(expectInputError(() => adapter.verify(signed('{"entry":[1]}')), 'malformed_body')).toMatch(/entry 0 is a number/);
  });

  describe('the GET verification request', () => {
    const query = (params: Record<string, string>) => new URLSearchParams(params);

    it("answers Meta's example with the challenge as text/plain when the token is the source's", () => {
      const { identity, answer } = adapter.answerGet!(query({ 'hub.mode': 'subscribe', 'hub.challenge': '1158201444', 'hub.verify_token': VERIFY_TOKEN }));
      expect(answer).toEqual({ status: 200, contentType: 'text/plain', body: '1158201444' });
      expect(identity).toEqual({ deliveryId: 'subscribe:1158201444', eventId: 'subscribe:1158201444', topic: 'subscribe' });
    });

    it('is refused 403 with a wrong or missing token, and 400 without hub.mode=subscribe or a challenge', () => {
      for (const token of [{ 'hub.verify_token': 'meatyhamhoc' }, { 'hub.verify_token': `${VERIFY_TOKEN}x` }, {}] as Record<string, string>[]) {
        const error = thrown(() => adapter.answerGet!(query({ 'hub.mode': 'subscribe', 'hub.challenge': '1', ...token })));
        expect(error).toBeInstanceOf(HttpError);
        expect(error).toMatchObject({ status: 403, code: 'invalid_verify_token' });
      }
      expectInputError(() => adapter.answerGet!(query({ 'hub.mode': 'unsubscribe', 'hub.challenge': '1', 'hub.verify_token': VERIFY_TOKEN })), 'malformed_request');
      expectInputError(() => adapter.answerGet!(query({ 'hub.mode': 'subscribe', 'hub.verify_token': VERIFY_TOKEN })), 'malformed_request');
    });
  });
});
