/**
 * `maxBatchItems`: each sender that batches refuses a list longer than the source takes with 413 too_many_items,
 * once the signature verified (a forged oversized batch is a 401 like any forgery), and takes one of that length.
 */
import { describe, expect, it } from 'vitest';
import { hubspot } from '../../../adapters/hubspot.ts';
import { meta } from '../../../adapters/meta.ts';
import { sendgrid } from '../../../adapters/sendgrid.ts';
import { twilio } from '../../../adapters/twilio.ts';
import type { Adapter, InboundRequest } from '../../../adapters/types.ts';
import { HttpError } from '../../../src/errors.ts';
import type { Delivery } from '../../support/deliveries.ts';
import { hubspotDelivery, metaDelivery, sendgridSigner, twilioJsonDelivery } from '../../support/signers.ts';
import { expectSignatureError } from './fixtures.ts';

const PUBLIC = 'https://hooks.example.com';
const sendgridKeys = sendgridSigner();
const otherSendgridKeys = sendgridSigner();
const request = (delivery: Delivery, target?: string): InboundRequest => ({
  headers: new Headers(delivery.headers),
  body: new TextEncoder().encode(delivery.body),
  now: new Date(),
  ...(target === undefined ? {} : { target }),
});
const events = <T>(n: number, event: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => event(i));

/** A sender, and a request of its carrying `n` events, signed with its secret or (forged) another. */
const senders: [string, Adapter, (n: number, forged?: boolean) => InboundRequest][] = [
  ['meta', meta.adapter({ secrets: ['app-secret'], verifyToken: 't' }), (n, forged) =>
    request(metaDelivery(forged ? 'wrong' : 'app-secret', { object: 'page', entry: events(n, (i) => ({ id: `p${i}`, time: 1, changes: [{ field: 'feed', value: { i } }] })) }))],
  ['sendgrid', sendgrid.adapter({ secrets: [sendgridKeys.key] }), (n, forged) =>
    request((forged ? otherSendgridKeys : sendgridKeys).delivery(events(n, (i) => ({ sg_event_id: `sg${i}`, event: 'open' }))))],
  ['hubspot', hubspot.adapter({ secrets: ['client-secret'], publicUrl: PUBLIC }), (n, forged) =>
    request(hubspotDelivery(forged ? 'wrong' : 'client-secret', `${PUBLIC}/in/crm`, events(n, (i) => ({ portalId: 1, subscriptionId: 2, eventId: i }))), '/in/crm')],
  ['twilio', twilio.adapter({ secrets: ['auth-token'], publicUrl: PUBLIC }), (n, forged) => {
    const { url, delivery } = twilioJsonDelivery(forged ? 'wrong' : 'auth-token', `${PUBLIC}/in/sms`, events(n, (i) => ({ id: `EZ${i}`, type: 't' })));
    return request(delivery, url.slice(PUBLIC.length));
  }],
];

describe('maxBatchItems', () => {
  for (const [name, adapter, signed] of senders) {
    it(`${name}: takes a batch of the limit, refuses one more 413 too_many_items, and a forged one 401`, () => {
      expect(adapter.verify({ ...signed(3), maxItems: 3 }).items).toHaveLength(3);
      // No limit where none is given: the adapter's own tests and samples.
      expect(adapter.verify(signed(4)).items).toHaveLength(4);
      let refused: unknown;
      try {
        adapter.verify({ ...signed(4), maxItems: 3 });
      } catch (error) {
        refused = error;
      }
      expect(refused).toBeInstanceOf(HttpError);
      expect([(refused as HttpError).status, (refused as HttpError).code]).toEqual([413, 'too_many_items']);
      expect((refused as HttpError).message).toMatch(/carries 4 events; this source takes at most 3/);
      expectSignatureError(() => adapter.verify({ ...signed(4, true), maxItems: 3 }));
    });
  }
});
