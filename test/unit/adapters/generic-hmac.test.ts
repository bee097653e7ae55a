import { describe, expect, it } from 'vitest';
import { genericHmac } from '../../../adapters/generic-hmac.ts';
import { genericHmacSchema } from '../../../adapters/generic-hmac.ts';
import {
  GENERIC_BODY,
  GENERIC_HEADER_OPTIONS,
  GENERIC_OPTIONS,
  GENERIC_SECRET,
  NOW,
  expectInputError,
  expectSignatureError,
  genericRequest,
  unixSeconds,
  withAlteredByte,
  withHeader,
  withOddCaseHeaderNames,
} from './fixtures.ts';

const adapter = genericHmac.adapter({ secrets: [GENERIC_SECRET], options: GENERIC_OPTIONS });
const t = unixSeconds(NOW);
/** A signed request whose body carries this `event` object. */
const eventRequest = (event: unknown) =>
  genericRequest(GENERIC_OPTIONS, { body: JSON.stringify({ event, order: { id: 42 } }) });

const headerAdapter = genericHmac.adapter({ secrets: [GENERIC_SECRET], options: GENERIC_HEADER_OPTIONS });
const headerRequest = (body = 'plain text, not JSON') =>
  genericRequest(GENERIC_HEADER_OPTIONS, {
    body,
    headers: { 'Content-Type': 'text/plain', 'X-Hook-Event': 'e-1', 'X-Hook-Topic': 'ping', 'X-Hook-Time': String(t) },
  });

describe('generic-hmac adapter', () => {
  it('accepts a request signed as configured and reads each identity where configured', () => {
    expect(adapter.verify(genericRequest())).toEqual({
      deliveryId: 'dlv_5521',
      eventId: 'evt_8891',
      topic: 'order.paid',
      occurredAt: new Date('2024-05-01T11:59:00.000Z'),
      json: JSON.parse(GENERIC_BODY),
    });
    expect(adapter).toMatchObject({ name: 'generic-hmac', ackTimeoutMs: 10_000, signatureHeaders: ['x-acme-signature'] });
  });

  it('works from headers alone, with base64 SHA-512 over the body and a body that is not JSON', () => {
    const request = headerRequest();
    expect(headerAdapter.verify(request)).toEqual({
      deliveryId: 'e-1',
      eventId: 'e-1',
      topic: 'ping',
      occurredAt: NOW,
      json: undefined,
    });
  });

  it('without a delivery ID, names the delivery by its event: stable across retries, distinct across events', () => {
    const retry = genericRequest(GENERIC_HEADER_OPTIONS, {
      body: 'plain text, not JSON',
      headers: { 'Content-Type': 'text/plain', 'X-Hook-Event': 'e-1', 'X-Hook-Topic': 'ping', 'X-Hook-Time': String(t + 30) },
    });
    expect(headerAdapter.verify(retry).deliveryId).toBe(headerAdapter.verify(headerRequest()).deliveryId);
    const sameBodyOtherEvent = genericRequest(GENERIC_HEADER_OPTIONS, {
      body: 'plain text, not JSON',
      headers: { 'Content-Type': 'text/plain', 'X-Hook-Event': 'e-2', 'X-Hook-Topic': 'ping', 'X-Hook-Time': String(t) },
    });
    expect(headerAdapter.verify(sameBodyOtherEvent).deliveryId).toBe('e-2');
    // Editors show this description: it must say what the adapter does.
    expect(genericHmacSchema.shape.deliveryId.description).toMatch(/^default: the event ID\b/);
  });

  it('accepts header names in any case', () => {
    expect(adapter.verify(withOddCaseHeaderNames(genericRequest())).deliveryId).toBe('dlv_5521');
  });

  it('accepts either secret while one is rotated', () => {
    const rotating = genericHmac.adapter({ secrets: ['old-secret', 'new-secret'], options: GENERIC_OPTIONS });
    expect(rotating.verify(genericRequest(GENERIC_OPTIONS, { secret: 'new-secret' })).eventId).toBe('evt_8891');
    expect(rotating.verify(genericRequest(GENERIC_OPTIONS, { secret: 'old-secret' })).eventId).toBe('evt_8891');
  });

  it('refuses a request signed with another secret', () => {
    const message = expectSignatureError(() => adapter.verify(genericRequest(GENERIC_OPTIONS, { secret: 'someone-else' })));
    expect(message).toMatch(/X-Acme-Signature does not match/);
  });

  it('refuses a request without the signature header', () => {
    const message = expectSignatureError(() => adapter.verify(withHeader(genericRequest(), 'X-Acme-Signature', null)));
    expect(message).toMatch(/missing X-Acme-Signature/);
  });

  it('refuses a signature without the configured prefix', () => {
    const request = genericRequest();
    const bare = request.headers.get('x-acme-signature')?.slice('sha256='.length) ?? '';
    const message = expectSignatureError(() => adapter.verify(withHeader(request, 'X-Acme-Signature', bare)));
    expect(message).toMatch(/start with "sha256="/);
  });

  it('refuses a body altered by one byte', () => {
    expectSignatureError(() => adapter.verify(withAlteredByte(genericRequest())));
    expectSignatureError(() => headerAdapter.verify(withAlteredByte(headerRequest())));
  });

  it('refuses a request without the timestamp header', () => {
    expectSignatureError(() => adapter.verify(withHeader(genericRequest(), 'X-Acme-Timestamp', null)));
  });

  it('refuses a timestamp changed after signing', () => {
    expectSignatureError(() => adapter.verify(withHeader(genericRequest(), 'X-Acme-Timestamp', String(t + 1))));
  });

  it('refuses a timestamp outside toleranceSeconds, in the past and in the future', () => {
    expect(adapter.verify(genericRequest(GENERIC_OPTIONS, { timestamp: t - 300 })).eventId).toBe('evt_8891');
    expectSignatureError(() => adapter.verify(genericRequest(GENERIC_OPTIONS, { timestamp: t - 301 })));
    expectSignatureError(() => adapter.verify(genericRequest(GENERIC_OPTIONS, { timestamp: t + 301 })));
  });

  // A sender stamping milliseconds was told to check its clock, which was right: the unit was not.
  it('refuses a timestamp in milliseconds, saying it is milliseconds rather than blaming the clock', () => {
    const message = expectSignatureError(() => adapter.verify(genericRequest(GENERIC_OPTIONS, { timestamp: NOW.getTime() + 1234 })));
    expect(message).toBe(
      `X-Acme-Timestamp is ${NOW.getTime() + 1234}, which is milliseconds (${new Date(NOW.getTime() + 1234).toISOString()}): it must be unix seconds, e.g. ${t + 1}`,
    );
    expect(expectSignatureError(() => adapter.verify(genericRequest(GENERIC_OPTIONS, { timestamp: t + 301 })))).toMatch(/in the future.*check the sender's clock$/);
  });

  it('refuses a signed body that is not JSON with 400 when an identity is read from it', () => {
    expectInputError(() => adapter.verify(genericRequest(GENERIC_OPTIONS, { body: '{"event":' })), 'malformed_body');
  });

  it('refuses a verified request whose event ID is missing or blank, naming where it looked', () => {
    const message = expectInputError(() => adapter.verify(eventRequest({})), 'missing_identity');
    expect(message).toMatch(/\/event\/id/);
    expectInputError(() => adapter.verify(eventRequest({ id: '  ' })), 'missing_identity');
  });

  it('refuses a verified request whose configured delivery header is missing', () => {
    const request = withHeader(genericRequest(), 'X-Acme-Delivery', null);
    expect(expectInputError(() => adapter.verify(request), 'missing_identity')).toMatch(/X-Acme-Delivery/);
  });

  it('takes numeric IDs as their decimal string and trims string IDs', () => {
    expect(adapter.verify(eventRequest({ id: 1234 })).eventId).toBe('1234');
    expect(adapter.verify(eventRequest({ id: ' e-7 ' })).eventId).toBe('e-7');
  });

  it('refuses a numeric ID JSON cannot carry exactly, and an ID that is neither string nor integer, saying what it is', () => {
    const huge = genericRequest(GENERIC_OPTIONS, { body: '{"event":{"id":12345678901234567890}}' });
    expectInputError(() => adapter.verify(huge), 'invalid_identity');
    expectInputError(() => adapter.verify(eventRequest({ id: 12.5 })), 'invalid_identity');
    const kinds = [[true, 'a boolean'], [null, 'null'], [{ id: 1 }, 'an object'], [['a'], 'an array']] as const;
    for (const [id, kind] of kinds) {
      expect(expectInputError(() => adapter.verify(eventRequest({ id })), 'invalid_identity')).toBe(
        `the body field /event/id is ${kind}, not a string or an integer`,
      );
    }
  });

  it('refuses an ID longer than 255 characters', () => {
    expectInputError(() => adapter.verify(eventRequest({ id: 'x'.repeat(256) })), 'invalid_identity');
  });

  it('follows RFC 6901 escapes in pointers', () => {
    const options = genericHmacSchema.parse({ signatureHeader: 'X-Sig', eventId: { pointer: '/a~1b/m~0n/1' } });
    const request = genericRequest(options, { body: JSON.stringify({ 'a/b': { 'm~n': ['zero', 'one'] } }) });
    expect(genericHmac.adapter({ secrets: [GENERIC_SECRET], options: options }).verify(request).eventId).toBe('one');
  });

  it('reads occurredAt as ISO 8601 or unix seconds and leaves anything else null', () => {
    const at = (value: unknown) =>
      adapter.verify(eventRequest({ id: 'e', at: value })).occurredAt;
    expect(at(t)).toEqual(NOW);
    expect(at('2024-05-01T12:00:00Z')).toEqual(NOW);
    expect(at('last tuesday')).toBeNull();
    expect(at(-1)).toBeNull();
  });
});
