import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { standardWebhooks } from '../../../adapters/standard-webhooks.ts';
import {
  NOW,
  STANDARD_BODY,
  STANDARD_ID,
  STANDARD_SECRET,
  expectInputError,
  expectSignatureError,
  inbound,
  secondsFrom,
  standardRequest,
  withAlteredByte,
  withHeader,
  withNow,
  withOddCaseHeaderNames,
} from './fixtures.ts';

const adapter = standardWebhooks.adapter({ secrets: [STANDARD_SECRET] });
// Two further keys in the whsec_<base64> form senders hand out.
const OLD_SECRET = `whsec_${Buffer.from('the-old-signing-key-0123').toString('base64')}`;
const NEW_SECRET = `whsec_${Buffer.from('the-new-signing-key-4567').toString('base64')}`;

describe('standard-webhooks adapter', () => {
  describe('the published test vector', () => {
    const vector = {
      id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      timestamp: '1614265330',
      payload: '{"test": 2432232314}',
      signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    };
    const at = new Date(Number(vector.timestamp) * 1000);
    const request = inbound(
      { 'webhook-id': vector.id, 'webhook-timestamp': vector.timestamp, 'webhook-signature': vector.signature },
      vector.payload,
      at,
    );

    it('is what the reference library signs', () => {
      expect(new Webhook(STANDARD_SECRET).sign(vector.id, at, vector.payload)).toBe(vector.signature);
    });

    it('is accepted at its timestamp', () => {
      expect(adapter.verify(request)).toEqual({
        deliveryId: vector.id,
        eventId: vector.id,
        topic: null,
        occurredAt: null,
        json: { test: 2432232314 },
      });
    });

    it('is refused as stale years later', () => {
      expect(expectSignatureError(() => adapter.verify(withNow(request, NOW)))).toMatch(/old/);
    });
  });

  it('accepts a message signed by the library; webhook-id names the event and its delivery', () => {
    expect(adapter.verify(standardRequest())).toEqual({
      deliveryId: STANDARD_ID,
      eventId: STANDARD_ID,
      topic: 'invoice.paid',
      occurredAt: new Date('2024-05-01T11:59:59.000Z'),
      json: JSON.parse(STANDARD_BODY),
    });
    expect(adapter).toMatchObject({ name: 'standard-webhooks', ackTimeoutMs: 15_000, signatureHeaders: ['webhook-signature'] });
  });

  it('accepts header names in any case', () => {
    expect(adapter.verify(withOddCaseHeaderNames(standardRequest())).eventId).toBe(STANDARD_ID);
  });

  it('accepts either secret while one is rotated', () => {
    const rotating = standardWebhooks.adapter({ secrets: [OLD_SECRET, NEW_SECRET] });
    expect(rotating.verify(standardRequest({ secret: NEW_SECRET })).eventId).toBe(STANDARD_ID);
    expect(rotating.verify(standardRequest({ secret: OLD_SECRET })).eventId).toBe(STANDARD_ID);
  });

  it('accepts a secret given without the whsec_ prefix', () => {
    const bare = standardWebhooks.adapter({ secrets: [STANDARD_SECRET.slice('whsec_'.length)] });
    expect(bare.verify(standardRequest()).eventId).toBe(STANDARD_ID);
  });

  it('refuses at start a secret that is not base64', () => {
    expect(() => standardWebhooks.adapter({ secrets: ['whsec_not base64!'] })).toThrow(/base64/);
  });

  it('accepts a signature list where one v1 entry matches and ignores other versions', () => {
    const good = standardRequest().headers.get('webhook-signature') ?? '';
    const wrong = standardRequest({ secret: OLD_SECRET }).headers.get('webhook-signature') ?? '';
    const list = `v1a,${good.slice(3)} ${wrong} ${good}`;
    expect(adapter.verify(withHeader(standardRequest(), 'webhook-signature', list)).eventId).toBe(STANDARD_ID);
    const otherVersionsOnly = withHeader(standardRequest(), 'webhook-signature', `v2,${good.slice(3)}`);
    const message = expectSignatureError(() => adapter.verify(otherVersionsOnly));
    expect(message).toMatch(/no v1/);
  });

  it('refuses a message signed with another secret', () => {
    expectSignatureError(() => adapter.verify(standardRequest({ secret: OLD_SECRET })));
  });

  it.each(['webhook-signature', 'webhook-timestamp', 'webhook-id'])('refuses a message without %s', (name) => {
    expect(expectSignatureError(() => adapter.verify(withHeader(standardRequest(), name, null)))).toMatch(name);
  });

  it('refuses a body altered by one byte', () => {
    expectSignatureError(() => adapter.verify(withAlteredByte(standardRequest())));
  });

  it('refuses a webhook-id changed after signing', () => {
    expectSignatureError(() => adapter.verify(withHeader(standardRequest(), 'webhook-id', 'msg_other')));
  });

  it('accepts a timestamp exactly 5 minutes old and refuses one a second older', () => {
    expect(adapter.verify(standardRequest({ timestamp: secondsFrom(NOW, -300) })).eventId).toBe(STANDARD_ID);
    const stale = standardRequest({ timestamp: secondsFrom(NOW, -301) });
    expect(expectSignatureError(() => adapter.verify(stale))).toMatch(/301 s old/);
  });

  it('refuses a timestamp more than 5 minutes in the future', () => {
    expect(adapter.verify(standardRequest({ timestamp: secondsFrom(NOW, 300) })).eventId).toBe(STANDARD_ID);
    const future = standardRequest({ timestamp: secondsFrom(NOW, 301) });
    expect(expectSignatureError(() => adapter.verify(future))).toMatch(/future/);
  });

  it('refuses a timestamp that is not unix seconds', () => {
    expectSignatureError(() => adapter.verify(withHeader(standardRequest(), 'webhook-timestamp', '2024-05-01T12:00:00Z')));
  });

  it('refuses a signed body that is not JSON with 400', () => {
    expectInputError(() => adapter.verify(standardRequest({ payload: '{"type":' })), 'malformed_body');
  });

  it('refuses a verified message whose webhook-id is blank with 400', () => {
    expectInputError(() => adapter.verify(standardRequest({ id: '' })), 'missing_identity');
  });

  it('leaves topic and occurredAt null when the body names neither', () => {
    expect(adapter.verify(standardRequest({ payload: '{"data":{"timestamp":1}}' }))).toMatchObject({
      topic: null,
      occurredAt: null,
    });
  });
});
