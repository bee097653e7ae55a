import fc from 'fast-check';
import twilioSdk from 'twilio';
import { describe, expect, it } from 'vitest';
import { twilio } from '../../../adapters/twilio.ts';
import type { InboundRequest } from '../../../adapters/types.ts';
import type { Delivery } from '../../support/deliveries.ts';
import { twilioDelivery, twilioJsonDelivery } from '../../support/signers.ts';
import { expectInputError, expectSignatureError, inbound, withHeader } from './fixtures.ts';

const TOKEN = 'twilio-auth-token-for-tests';
const PUBLIC = 'https://hooks.example.com';
const PATH = '/in/sms';
const adapter = twilio.adapter({ secrets: [TOKEN], publicUrl: PUBLIC });

const request = ({ body, headers }: Delivery, target = PATH): InboundRequest => ({ ...inbound(headers, body), target });

// A message status callback, as Twilio's messaging docs list its parameters.
const STATUS = {
  AccountSid: 'AC00000000000000000000000000000001',
  From: '+15005550006',
  MessageSid: 'SM0123456789abcdef0123456789abcdef',
  MessageStatus: 'delivered',
  SmsSid: 'SM0123456789abcdef0123456789abcdef',
  SmsStatus: 'delivered',
  To: '+15005550001',
};

describe('twilio adapter', () => {
  it("verifies the request in Twilio's documentation, a signed URL with a query string", () => {
    // https://www.twilio.com/docs/usage/webhooks/webhooks-security: the Auth Token 12345, and its signature.
    const url = 'https://mycompany.com/myapp.php?foo=1&bar=2';
    const params = { CallSid: 'CA1234567890ABCDE', Caller: '+12349013030', Digits: '1234', From: '+12349013030', To: '+18005551212' };
    const signature = '0/KCTR6DLpKmkAf8muzZqo1nDgQ=';
    expect(twilioSdk.validateRequest('12345', signature, url, params)).toBe(true);
    const documented = twilio.adapter({ secrets: ['12345'], publicUrl: 'https://mycompany.com' });
    const identity = documented.verify(request({ body: new URLSearchParams(params).toString(), headers: { 'x-twilio-signature': signature } }, '/myapp.php?foo=1&bar=2'));
    expect(identity).toMatchObject({ eventId: 'CA1234567890ABCDE', deliveryId: 'CA1234567890ABCDE', topic: null, json: params });
  });

  it("accepts what Twilio's SDK signs, and reads the form as JSON for filters and transforms", () => {
    const delivery = twilioDelivery(TOKEN, PUBLIC + PATH, STATUS);
    expect(twilioSdk.validateRequest(TOKEN, delivery.headers['x-twilio-signature']!, PUBLIC + PATH, STATUS)).toBe(true);
    expect(adapter.verify(request(delivery))).toEqual({
      deliveryId: 'SM0123456789abcdef0123456789abcdef:delivered',
      eventId: 'SM0123456789abcdef0123456789abcdef:delivered',
      topic: 'delivered',
      occurredAt: null,
      json: STATUS,
    });
    expect(adapter).toMatchObject({ ackTimeoutMs: 15_000, signatureHeaders: ['x-twilio-signature'] });
  });

  it('makes each status of one message its own event, and names the delivery by the token Twilio repeats on a retry', () => {
    const sent = adapter.verify(request(twilioDelivery(TOKEN, PUBLIC + PATH, { ...STATUS, MessageStatus: 'sent', SmsStatus: 'sent' }, { 'i-twilio-idempotency-token': 'idem-1' })));
    const delivered = adapter.verify(request(twilioDelivery(TOKEN, PUBLIC + PATH, STATUS, { 'i-twilio-idempotency-token': 'idem-2' })));
    expect([sent.eventId, sent.deliveryId, sent.topic]).toEqual(['SM0123456789abcdef0123456789abcdef:sent', 'idem-1', 'sent']);
    expect([delivered.eventId, delivered.deliveryId]).toEqual(['SM0123456789abcdef0123456789abcdef:delivered', 'idem-2']);
  });

  it.each([
    ['an incoming message', { MessageSid: 'SM1', SmsSid: 'SM1', SmsStatus: 'received', Body: 'hi' }, 'SM1:received', 'received'],
    ['a call status callback', { CallSid: 'CA1', CallStatus: 'completed', Timestamp: 'Tue, 02 Jan 2024 10:00:00 +0000' }, 'CA1:completed', 'completed'],
    ['a recording callback, which names its call too', { CallSid: 'CA1', RecordingSid: 'RE1', RecordingStatus: 'completed' }, 'RE1:completed', 'completed'],
    ['a transcription callback, which names its recording too', { CallSid: 'CA1', RecordingSid: 'RE1', TranscriptionSid: 'TR1', TranscriptionStatus: 'completed' }, 'TR1:completed', 'completed'],
  ])('names %s by its resource and status', (_, params, eventId, topic) => {
    expect(adapter.verify(request(twilioDelivery(TOKEN, PUBLIC + PATH, params)))).toMatchObject({ eventId, topic });
  });

  it("reads a voice callback's Timestamp as when it happened", () => {
    const identity = adapter.verify(request(twilioDelivery(TOKEN, PUBLIC + PATH, { CallSid: 'CA1', CallStatus: 'ringing', Timestamp: 'Tue, 02 Jan 2024 10:00:00 +0000' })));
    expect(identity.occurredAt).toEqual(new Date('2024-01-02T10:00:00Z'));
  });

  it('verifies a URL signed with its port, as the SDK does, and the path and query as they were called', () => {
    expect(adapter.verify(request(twilioDelivery(TOKEN, `${PUBLIC}:443${PATH}`, STATUS))).topic).toBe('delivered');
    const query = "/in/sms?tenant=O'Brien&x=1";
    expect(adapter.verify(request(twilioDelivery(TOKEN, PUBLIC + query, STATUS), query)).topic).toBe('delivered');
    // A URL parser writes ' as %27; a sender that signed the parsed URL verifies too.
    expect(adapter.verify(request(twilioDelivery(TOKEN, `${PUBLIC}/in/sms?tenant=O%27Brien&x=1`, STATUS), query)).topic).toBe('delivered');
  });

  it("verifies a Webhooks Rule's SharedKey signature with the algorithm its settings header names", () => {
    const sharedKey = 'shared-key-secret';
    const params = { MessageSid: 'SM9', SmsStatus: 'received' };
    const settings = { 'x-twilio-webhooks-signature-settings': 'key=webhooks_sharedkey_1,algorithm=HMAC_SHA256' };
    const signature = twilioSdk.getExpectedTwilioSignature(sharedKey, PUBLIC + PATH, params, 'HMAC_SHA256');
    const body = new URLSearchParams(params).toString();
    const both = twilio.adapter({ secrets: [TOKEN, sharedKey], publicUrl: PUBLIC });
    expect(both.verify(request({ body, headers: { ...settings, 'x-twilio-signature': signature } })).eventId).toBe('SM9:received');
    // Without the header, the same signature is read as the Auth Token's SHA-1, and does not match.
    expectSignatureError(() => both.verify(request({ body, headers: { 'x-twilio-signature': signature } })));
    const unknown = { 'x-twilio-webhooks-signature-settings': 'key=k,algorithm=HMAC_SHA512', 'x-twilio-signature': signature };
    expect(expectSignatureError(() => both.verify(request({ body, headers: unknown })))).toMatch(/HMAC_SHA512/);
  });

  it('verifies a JSON body by the bodySHA256 its signed URL carries, and makes one event per CloudEvent of Event Streams', () => {
    const events = [
      { specversion: '1.0', type: 'com.twilio.messaging.message.delivered', source: '/2010-04-01/Accounts/AC1/Messages/SM1.json', id: 'EZ1', time: '2026-06-10T06:02:54.377Z', data: { messageSid: 'SM1' } },
      { specversion: '1.0', type: 'com.twilio.messaging.message.failed', source: '/2010-04-01/Accounts/AC1/Messages/SM2.json', id: 'EZ2', time: '2026-06-10T06:02:55.000Z', data: { messageSid: 'SM2' } },
    ];
    const { url, delivery } = twilioJsonDelivery(TOKEN, PUBLIC + PATH, events);
    expect(twilioSdk.validateRequestWithBody(TOKEN, delivery.headers['x-twilio-signature']!, url, delivery.body)).toBe(true);
    const target = url.slice(PUBLIC.length);
    const identity = adapter.verify(request(delivery, target));
    expect(identity.items!.map(({ eventId, topic, occurredAt }) => [eventId, topic, occurredAt])).toEqual([
      ['EZ1', 'com.twilio.messaging.message.delivered', new Date('2026-06-10T06:02:54.377Z')],
      ['EZ2', 'com.twilio.messaging.message.failed', new Date('2026-06-10T06:02:55.000Z')],
    ]);
    expect(JSON.parse(Buffer.from(identity.items![1]!.body).toString())).toEqual(events[1]);
    expect(expectSignatureError(() => adapter.verify(request({ ...delivery, body: delivery.body.replace('EZ2', 'EZ3') }, target)))).toMatch(/bodySHA256/);
    expect(expectSignatureError(() => adapter.verify(request(delivery, PATH)))).toMatch(/bodySHA256 in the URL/);
  });

  it('refuses a wrong Auth Token, another public URL, a changed parameter and a missing signature, saying which', () => {
    const delivery = twilioDelivery(TOKEN, PUBLIC + PATH, STATUS);
    expect(expectSignatureError(() => twilio.adapter({ secrets: ['wrong'], publicUrl: PUBLIC }).verify(request(delivery)))).toMatch(/does not match the URL and parameters/);
    expectSignatureError(() => twilio.adapter({ secrets: [TOKEN], publicUrl: 'https://other.example.com' }).verify(request(delivery)));
    expectSignatureError(() => adapter.verify(request(delivery, '/in/sms-old')));
    expectSignatureError(() => adapter.verify(request({ ...delivery, body: delivery.body.replace('delivered', 'failed') })));
    expect(expectSignatureError(() => adapter.verify(withHeader(request(delivery), 'x-twilio-signature', null)))).toMatch(/missing X-Twilio-Signature/);
  });

  it('accepts a rotated Auth Token: any configured one that verifies', () => {
    const delivery = twilioDelivery(TOKEN, PUBLIC + PATH, STATUS);
    expect(twilio.adapter({ secrets: ['old-token', TOKEN], publicUrl: PUBLIC }).verify(request(delivery)).topic).toBe('delivered');
  });

  it('keeps every value of a repeated field, and a field named __proto__ as a field', () => {
    const body = 'MessageSid=SM1&SmsStatus=received&MediaUrl=a&MediaUrl=b&__proto__=x';
    // Parsed, not written as a literal: in a literal, `__proto__: 'x'` is no field.
    const fields = JSON.parse('{"MessageSid":"SM1","SmsStatus":"received","MediaUrl":["a","b"],"__proto__":"x"}');
    const signature = twilioSdk.getExpectedTwilioSignature(TOKEN, PUBLIC + PATH, fields);
    const { json } = adapter.verify(request({ body, headers: { 'x-twilio-signature': signature } }));
    expect(json).toEqual(fields);
    expect(Object.getPrototypeOf(json)).toBe(Object.prototype);
  });

  it('refuses a verified request that names no resource, and a body that is not UTF-8', () => {
    const none = twilioDelivery(TOKEN, PUBLIC + PATH, { AccountSid: 'AC1' });
    expect(expectInputError(() => adapter.verify(request(none)), 'missing_identity')).toMatch(/MessageSid/);
    // %FF decodes to U+FFFD in a form, but a raw 0xFF byte is no text at all.
    const raw = Buffer.concat([Buffer.from('MessageSid=SM1&Body='), Buffer.from([0xff])]);
    const signature = twilioSdk.getExpectedTwilioSignature(TOKEN, PUBLIC + PATH, { MessageSid: 'SM1', Body: '\ufffd' });
    expectInputError(() => adapter.verify({ ...inbound({ 'x-twilio-signature': signature }, raw), target: PATH }), 'malformed_body');
  });

  it('needs the public URL it signs', () => {
    expect(() => twilio.adapter({ secrets: [TOKEN], publicUrl: undefined })).toThrow(/publicUrl/);
  });

  it('never verifies parameters other than the signed ones', () => {
    const name = fc.stringMatching(/^[A-Za-z][A-Za-z0-9]{0,11}$/);
    fc.assert(
      fc.property(fc.dictionary(name, fc.string({ maxLength: 20 }), { minKeys: 1, maxKeys: 6 }), fc.nat(), fc.string({ minLength: 1, maxLength: 5 }), (params, pick, extra) => {
        const delivery = twilioDelivery(TOKEN, PUBLIC + PATH, { ...params, MessageSid: 'SM1' });
        const names = Object.keys(params);
        const changed = { ...params, MessageSid: 'SM1', [names[pick % names.length]!]: params[names[pick % names.length]!] + extra };
        expectSignatureError(() => adapter.verify(request({ ...delivery, body: new URLSearchParams(changed).toString() })));
      }),
    );
  });

  it("pins a limit of Twilio's scheme, names and values joined without a separator, and how the IDs are kept from it", () => {
    const delivery = twilioDelivery(TOKEN, PUBLIC + PATH, { MessageSid: 'SM1', SmsStatus: 'received', Body: 'hello' });
    // The same parameters in another order sign the same; so do others split elsewhere (past the signature, this
    // one names no message): see docs/senders.md.
    expect(adapter.verify(request({ ...delivery, body: 'SmsStatus=received&MessageSid=SM1&Body=hello' })).eventId).toBe('SM1:received');
    expectInputError(() => adapter.verify(request({ ...delivery, body: 'Body=helloMessageSidSM1&SmsStatus=received' })), 'missing_identity');
    // A split that would name another event: its SID or status no longer looks like Twilio's.
    const both = twilioDelivery(TOKEN, PUBLIC + PATH, { MessageSid: 'SM1', SmsSid: 'SM1', SmsStatus: 'received', To: '+1' });
    expect(expectInputError(() => adapter.verify(request({ ...both, body: 'MessageSid=SM1SmsSidSM1&SmsStatus=received&To=%2B1' })), 'invalid_identity')).toMatch(/not a Twilio SID/);
    expect(expectInputError(() => adapter.verify(request({ ...both, body: 'MessageSid=SM1&SmsSid=SM1&SmsStatus=receivedTo%2B1' })), 'invalid_identity')).toMatch(/not one of Twilio's/);
  });
});
