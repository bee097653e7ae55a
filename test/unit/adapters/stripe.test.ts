import { describe, expect, it } from 'vitest';
import { stripe } from '../../../adapters/stripe.ts';
import {
  NOW,
  STRIPE_BODY,
  STRIPE_SECRET,
  expectInputError,
  expectSignatureError,
  stripeRequest,
  unixSeconds,
  withAlteredByte,
  withHeader,
  withOddCaseHeaderNames,
} from './fixtures.ts';

const adapter = stripe.adapter({ secrets: [STRIPE_SECRET] });
const EVENT_ID = 'evt_1PBkzA2eZvKYlo2CQ1v5W6Xh';
const t = unixSeconds(NOW);
const stripeBody = (fields: Record<string, unknown>) => JSON.stringify({ ...JSON.parse(STRIPE_BODY), ...fields });

describe('stripe adapter', () => {
  it('accepts an event signed by the Stripe library; the delivery is the event itself', () => {
    expect(adapter.verify(stripeRequest())).toEqual({
      deliveryId: EVENT_ID,
      eventId: EVENT_ID,
      topic: 'payment_intent.succeeded',
      occurredAt: new Date(1714564790 * 1000),
      json: JSON.parse(STRIPE_BODY),
    });
    expect(adapter).toMatchObject({ name: 'stripe', ackTimeoutMs: 15_000, signatureHeaders: ['stripe-signature'] });
  });

  it('names a retry, signed at a new t, the same delivery of the same event', () => {
    const retry = adapter.verify(stripeRequest({ timestamp: t + 60 }));
    expect(retry).toMatchObject({ eventId: EVENT_ID, deliveryId: EVENT_ID });
  });

  it('accepts header names in any case', () => {
    expect(adapter.verify(withOddCaseHeaderNames(stripeRequest())).eventId).toBe(EVENT_ID);
  });

  it('accepts either secret while one is rotated', () => {
    const rotating = stripe.adapter({ secrets: ['whsec_old', 'whsec_new'] });
    expect(rotating.verify(stripeRequest({ secret: 'whsec_new' })).eventId).toBe(EVENT_ID);
    expect(rotating.verify(stripeRequest({ secret: 'whsec_old' })).eventId).toBe(EVENT_ID);
  });

  it('accepts a header listing several v1 signatures when any one matches (Stripe rolling a secret)', () => {
    const v1 = (secret: string) => stripeRequest({ secret }).headers.get('stripe-signature')?.match(/v1=(\w+)/)?.[1];
    const header = `t=${t},v1=${v1('whsec_other')},v1=${v1(STRIPE_SECRET)}`;
    const request = withHeader(stripeRequest(), 'Stripe-Signature', header);
    expect(adapter.verify(request).eventId).toBe(EVENT_ID);
  });

  it('refuses a request signed with another secret', () => {
    const message = expectSignatureError(() => adapter.verify(stripeRequest({ secret: 'whsec_someone_else' })));
    expect(message).not.toContain(STRIPE_SECRET);
  });

  it('refuses a request without Stripe-Signature', () => {
    const message = expectSignatureError(() => adapter.verify(withHeader(stripeRequest(), 'Stripe-Signature', null)));
    expect(message).toMatch(/missing Stripe-Signature/);
  });

  it('ignores schemes other than v1', () => {
    const message = expectSignatureError(() => adapter.verify(stripeRequest({ scheme: 'v0' })));
    expect(message).toMatch(/no v1/);
  });

  it('refuses a header without t=', () => {
    const header = stripeRequest().headers.get('stripe-signature')?.replace(/^t=\d+,/, '') ?? '';
    expect(expectSignatureError(() => adapter.verify(withHeader(stripeRequest(), 'Stripe-Signature', header)))).toMatch(/t=/);
  });

  it('refuses a body altered by one byte', () => {
    expectSignatureError(() => adapter.verify(withAlteredByte(stripeRequest())));
  });

  it('accepts a timestamp exactly 300 s old and refuses one a second older', () => {
    expect(adapter.verify(stripeRequest({ timestamp: t - 300 })).eventId).toBe(EVENT_ID);
    expect(expectSignatureError(() => adapter.verify(stripeRequest({ timestamp: t - 301 })))).toMatch(/301 s old/);
  });

  it('refuses a timestamp more than 300 s in the future', () => {
    expect(adapter.verify(stripeRequest({ timestamp: t + 300 })).eventId).toBe(EVENT_ID);
    expect(expectSignatureError(() => adapter.verify(stripeRequest({ timestamp: t + 301 })))).toMatch(/in the future/);
  });

  it('refuses a signed body that is not JSON with 400', () => {
    expectInputError(() => adapter.verify(stripeRequest({ payload: '{"id": "evt_1",' })), 'malformed_body');
  });

  it('refuses a verified event without an id with 400', () => {
    const request = stripeRequest({ payload: stripeBody({ id: undefined }) });
    expect(expectInputError(() => adapter.verify(request), 'missing_identity')).toMatch(/"id"/);
  });

  // Stripe's event IDs are always strings ("evt_…"): a number there is not one, and was called missing.
  it('refuses a verified event whose id is not a string, saying what it is', () => {
    const request = stripeRequest({ payload: stripeBody({ id: 123 }) });
    expect(expectInputError(() => adapter.verify(request), 'invalid_identity')).toBe(
      'the event id (body "id") is a number, not a string',
    );
  });

  it('leaves topic and occurredAt null when type and created are missing', () => {
    const request = stripeRequest({ payload: stripeBody({ type: undefined, created: 'soon' }) });
    expect(adapter.verify(request)).toMatchObject({ topic: null, occurredAt: null });
  });
});
