import { Signature } from '@hubspot/api-client';
import { describe, expect, it } from 'vitest';
import { hubspot } from '../../../adapters/hubspot.ts';
import type { InboundRequest } from '../../../adapters/types.ts';
import { hubspotDelivery } from '../../support/signers.ts';
import { expectInputError, expectSignatureError, inbound, withAlteredByte, withHeader } from './fixtures.ts';

const SECRET = 'yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy';
const PUBLIC_URL = 'https://hooks.example.com';
const adapter = hubspot.adapter({ secrets: [SECRET], publicUrl: PUBLIC_URL });

// The shape of HubSpot's documented payload ("Webhook payloads"): a list, one object per event.
const CREATED = { eventId: 1, subscriptionId: 12345, portalId: 62515, appId: 54321, occurredAt: 1564113600000, subscriptionType: 'contact.creation', attemptNumber: 0, objectId: 123, changeSource: 'CRM', changeFlag: 'NEW' };
const CHANGED = { ...CREATED, eventId: 2, subscriptionType: 'contact.propertyChange', propertyName: 'email', propertyValue: 'a@example.com', occurredAt: 1564113601000 };

/** A request as the route builds it: the delivery's headers and body, the path it arrived at, the arrival time. */
function arriving(delivery: { headers: Record<string, string>; body: string }, target: string, now = new Date()): InboundRequest {
  return { ...inbound(delivery.headers, delivery.body, now), target };
}

describe('hubspot adapter', () => {
  it('accepts what @hubspot/api-client signs and validates, and makes one event per item of the list', () => {
    const timestamp = Date.now();
    const delivery = hubspotDelivery(SECRET, `${PUBLIC_URL}/in/crm`, [CREATED, CHANGED], timestamp);
    const libraryAccepts = Signature.isValid({
      signatureVersion: 'v3',
      clientSecret: SECRET,
      url: `${PUBLIC_URL}/in/crm`,
      method: 'POST',
      requestBody: delivery.body,
      timestamp,
      signature: delivery.headers['x-hubspot-signature-v3']!,
    });
    expect(libraryAccepts).toBe(true);

    const identity = adapter.verify(arriving(delivery, '/in/crm', new Date(timestamp)));
    expect(identity.items!.map(({ body, json, ...item }) => item)).toEqual([
      { deliveryId: '62515:12345:1', eventId: '62515:12345:1', topic: 'contact.creation', occurredAt: new Date(1564113600000) },
      { deliveryId: '62515:12345:2', eventId: '62515:12345:2', topic: 'contact.propertyChange', occurredAt: new Date(1564113601000) },
    ]);
    // Each item's tasks send that event alone.
    expect(JSON.parse(Buffer.from(identity.items![1]!.body).toString())).toEqual(CHANGED);
    expect(identity).toMatchObject({ deliveryId: '62515:12345:1', eventId: '62515:12345:1' });
    expect(adapter).toMatchObject({ ackTimeoutMs: 5000, signatureHeaders: ['x-hubspot-signature-v3', 'x-hubspot-signature'] });
  });

  it('names a retry as the first delivery: only attemptNumber changes', () => {
    const first = adapter.verify(arriving(hubspotDelivery(SECRET, `${PUBLIC_URL}/in/crm`, [CREATED]), '/in/crm'));
    const retry = adapter.verify(arriving(hubspotDelivery(SECRET, `${PUBLIC_URL}/in/crm`, [{ ...CREATED, attemptNumber: 3 }]), '/in/crm'));
    expect(retry.items![0]!.deliveryId).toBe(first.items![0]!.deliveryId);
    // An eventId HubSpot reuses in another account is another event.
    const elsewhere = adapter.verify(arriving(hubspotDelivery(SECRET, `${PUBLIC_URL}/in/crm`, [{ ...CREATED, portalId: 7 }]), '/in/crm'));
    expect(elsewhere.items![0]!.eventId).toBe('7:12345:1');
  });

  it('signs the URL HubSpot called: the public origin, the path and query it arrived at, the listed characters decoded', () => {
    // HubSpot's v3 instructions decode %3A and the like before signing; the library signs the URL as given.
    const delivery = hubspotDelivery(SECRET, 'https://hooks.example.com/in/crm?portal=a:b', [CREATED]);
    expect(adapter.verify(arriving(delivery, '/in/crm?portal=a%3Ab')).items).toHaveLength(1);
    // publicUrl may be written with the path: only its origin is taken.
    const withPath = hubspot.adapter({ secrets: [SECRET], publicUrl: 'https://hooks.example.com/in/crm' });
    expect(withPath.verify(arriving(hubspotDelivery(SECRET, `${PUBLIC_URL}/in/crm`, [CREATED]), '/in/crm')).items).toHaveLength(1);
    // Another host is another URL: the message names the URL checked, so a wrong publicUrl shows.
    const elsewhere = hubspotDelivery(SECRET, 'https://gateway.internal/in/crm', [CREATED]);
    expect(expectSignatureError(() => adapter.verify(arriving(elsewhere, '/in/crm')))).toMatch(/POST https:\/\/hooks\.example\.com\/in\/crm/);
  });

  it('refuses a wrong secret, a tampered body, and a timestamp over five minutes off in either direction', () => {
    const at = Date.now();
    const delivery = hubspotDelivery(SECRET, `${PUBLIC_URL}/in/crm`, [CREATED], at);
    expect(expectSignatureError(() => adapter.verify(arriving(hubspotDelivery('another secret', `${PUBLIC_URL}/in/crm`, [CREATED], at), '/in/crm')))).toMatch(/does not match/);
    expectSignatureError(() => adapter.verify(withAlteredByte(arriving(delivery, '/in/crm'))));
    expect(expectSignatureError(() => adapter.verify(arriving(delivery, '/in/crm', new Date(at + 301_000))))).toMatch(/301 s old/);
    expect(expectSignatureError(() => adapter.verify(arriving(delivery, '/in/crm', new Date(at - 301_000))))).toMatch(/301 s in the future/);
    expect(adapter.verify(arriving(delivery, '/in/crm', new Date(at + 299_000))).items).toHaveLength(1);
    // A timestamp in seconds is said to be one, not a replay.
    const seconds = withHeader(arriving(delivery, '/in/crm'), 'x-hubspot-request-timestamp', String(Math.floor(at / 1000)));
    expect(expectSignatureError(() => adapter.verify(seconds))).toMatch(/which is unix seconds/);
  });

  it('refuses a request without its v3 signature, naming the older one when only that came', () => {
    const request = arriving(hubspotDelivery(SECRET, `${PUBLIC_URL}/in/crm`, [CREATED]), '/in/crm');
    expect(expectSignatureError(() => adapter.verify(withHeader(request, 'x-hubspot-signature-v3', null)))).toMatch(/missing X-HubSpot-Signature-v3/);
    expect(expectSignatureError(() => adapter.verify(withHeader(request, 'x-hubspot-request-timestamp', null)))).toMatch(/missing X-HubSpot-Request-Timestamp/);
    const v1Only = withHeader(withHeader(request, 'x-hubspot-signature-v3', null), 'x-hubspot-signature', 'a'.repeat(64));
    expect(expectSignatureError(() => adapter.verify(v1Only))).toMatch(/only the v1\/v2 X-HubSpot-Signature/);
  });

  it('refuses a verified body that is not a list of events, and an event without its ids', () => {
    for (const body of [{}, []]) {
      expectInputError(() => adapter.verify(arriving(hubspotDelivery(SECRET, `${PUBLIC_URL}/in/crm`, body as object[]), '/in/crm')), 'malformed_body');
    }
    const { eventId: _, ...noEventId } = CREATED;
    expect(expectInputError(() => adapter.verify(arriving(hubspotDelivery(SECRET, `${PUBLIC_URL}/in/crm`, [CREATED, noEventId]), '/in/crm')), 'missing_identity')).toMatch(/event 1's eventId/);
    const objectPortal = { ...CREATED, portalId: { id: 1 } };
    expectInputError(() => adapter.verify(arriving(hubspotDelivery(SECRET, `${PUBLIC_URL}/in/crm`, [objectPortal]), '/in/crm')), 'invalid_identity');
  });
});
