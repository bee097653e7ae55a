import { describe, expect, it } from 'vitest';
import { typeform } from '../../../adapters/typeform.ts';
import { typeformDelivery } from '../../support/signers.ts';
import { expectInputError, expectSignatureError, inbound, withAlteredByte, withHeader } from './fixtures.ts';

// Typeform publishes no verifying library; its "Secure your webhooks" steps (base64 HMAC-SHA256 of the body,
// prefixed "sha256=") and its example payload's fields are what these follow.
const SECRET = 'typeform-webhook-secret';
const adapter = typeform.adapter({ secrets: [SECRET] });
const RESPONSE = {
  event_id: '01KBYWTTXW2SXX86TBH2SGNCCS',
  event_type: 'form_response',
  form_response: { form_id: 'V5UCKg7t', token: 'a3a12ec67a1ace1b5d2b2a0cbc3aa79b', landed_at: '2026-05-01T11:58:01Z', submitted_at: '2026-05-01T12:00:00Z', answers: [] },
};

const request = (delivery: { headers: Record<string, string>; body: string }) => inbound(delivery.headers, delivery.body);

describe('typeform adapter', () => {
  it('names the delivery and the event by event_id, the topic by event_type, the time by submitted_at', () => {
    expect(adapter.verify(request(typeformDelivery(SECRET, RESPONSE)))).toEqual({
      deliveryId: '01KBYWTTXW2SXX86TBH2SGNCCS',
      eventId: '01KBYWTTXW2SXX86TBH2SGNCCS',
      topic: 'form_response',
      occurredAt: new Date('2026-05-01T12:00:00Z'),
      json: RESPONSE,
    });
    expect(adapter).toMatchObject({ ackTimeoutMs: 30_000, signatureHeaders: ['typeform-signature'] });
  });

  it('checks no timestamp: Typeform signs none, so a delivery verifies whenever it arrives', () => {
    const delivery = typeformDelivery(SECRET, RESPONSE);
    expect(adapter.verify(inbound(delivery.headers, delivery.body, new Date('2036-01-01T00:00:00Z'))).eventId).toBe(RESPONSE.event_id);
  });

  it('refuses a wrong secret, a tampered body, a signature without its prefix, and none', () => {
    expect(expectSignatureError(() => adapter.verify(request(typeformDelivery('wrong', RESPONSE))))).toMatch(/Typeform-Signature does not match/);
    expectSignatureError(() => adapter.verify(withAlteredByte(request(typeformDelivery(SECRET, RESPONSE)))));
    const signed = request(typeformDelivery(SECRET, RESPONSE));
    const bare = withHeader(signed, 'typeform-signature', signed.headers.get('typeform-signature')!.slice('sha256='.length));
    expect(expectSignatureError(() => adapter.verify(bare))).toMatch(/must look like "sha256=<base64>"/);
    expect(expectSignatureError(() => adapter.verify(withHeader(signed, 'typeform-signature', null)))).toMatch(/missing Typeform-Signature/);
  });

  it('refuses a verified body without its event_id', () => {
    const { event_id: _, ...rest } = RESPONSE;
    expectInputError(() => adapter.verify(request(typeformDelivery(SECRET, rest))), 'missing_identity');
    expectInputError(() => adapter.verify(request(typeformDelivery(SECRET, { ...RESPONSE, event_id: 42 }))), 'invalid_identity');
  });
});
