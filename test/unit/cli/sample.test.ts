import { describe, expect, it } from 'vitest';
import { createAdapter } from '../../../adapters/index.ts';
import { parseConfig } from '../../../src/config/load.ts';
import { buildSample, SampleError } from '../../../src/cli/sample.ts';

const { config } = parseConfig(
  JSON.stringify({
    sources: {
      payments: { adapter: 'stripe', secrets: ['whsec_test'], actions: { ledger: { url: 'https://ledger.example/' } } },
      shop: { adapter: 'shopify', secrets: ['s'], actions: { crm: { url: 'https://crm.example/' } } },
      // The README's example: an event ID and a topic, and no delivery ID of its own.
      acme: {
        adapter: 'generic-hmac',
        secrets: ['s'],
        hmac: { signatureHeader: 'X-Acme-Signature', eventId: { pointer: '/event/id' }, topic: { pointer: '/event/type' } },
        actions: { crm: { url: 'https://crm.example/' } },
      },
      twitch: { adapter: 'twitch', secrets: ['twitch-secret-0123'], actions: { crm: { url: 'https://crm.example/' } } },
      zoom: { adapter: 'zoom', secrets: ['zoom-secret-token'], actions: { crm: { url: 'https://crm.example/' } } },
      meta: { adapter: 'meta', secrets: ['app-secret'], verifyToken: 'meatyhamhock', actions: { crm: { url: 'https://crm.example/' } } },
      sms: { adapter: 'twilio', secrets: ['twilio-token'], publicUrl: 'https://hooks.example.com', actions: { crm: { url: 'https://crm.example/' } } },
      pos: { adapter: 'square', secrets: ['square-key'], publicUrl: 'https://hooks.example.com', actions: { crm: { url: 'https://crm.example/' } } },
      billing: { adapter: 'paddle', secrets: ['pdl_ntfset_x'], actions: { crm: { url: 'https://crm.example/' } } },
      store: { adapter: 'woocommerce', secrets: ['wc-secret'], actions: { crm: { url: 'https://crm.example/' } } },
      withDeliveryId: {
        adapter: 'generic-hmac',
        secrets: ['s'],
        hmac: { signatureHeader: 'X-Acme-Signature', eventId: { pointer: '/event/id' }, deliveryId: { header: 'X-Acme-Delivery' } },
        actions: { crm: { url: 'https://crm.example/' } },
      },
    },
  }),
  'test',
);

describe('send-sample', () => {
  it('refuses --delivery-id for a sender whose deliveries carry only the event ID, instead of ignoring it', () => {
    expect(() => buildSample(config.sources.payments!, { eventId: '1', deliveryId: 'first' })).toThrow(SampleError);
    expect(buildSample(config.sources.shop!, { eventId: '1', deliveryId: 'first' }).headers['x-shopify-webhook-id']).toBe('first');
  });

  it('refuses --delivery-id for a generic-hmac source whose config names no delivery ID, and places it where one is named', () => {
    expect(() => buildSample(config.sources.acme!, { eventId: '1', deliveryId: 'first' })).toThrow(/^--delivery-id: this generic-hmac source's hmac names no deliveryId/);
    expect(buildSample(config.sources.withDeliveryId!, { eventId: '1', deliveryId: 'first' }).headers['x-acme-delivery']).toBe('first');
  });

  it('keeps a Stripe event ID given whole, and prefixes a bare one', () => {
    const idOf = (eventId: string) => JSON.parse(buildSample(config.sources.payments!, { eventId }).body).id;
    expect(idOf('evt_1')).toBe('evt_1');
    expect(idOf('1')).toBe('evt_1');
  });

  it('signs twitch, zoom and meta samples their adapters verify, the same --event-id naming the same event', () => {
    for (const id of ['twitch', 'zoom', 'meta']) {
      const source = config.sources[id]!;
      const verify = (eventId: string) => {
        const { headers, body } = buildSample(source, { eventId });
        const identity = createAdapter(source).verify({ headers: new Headers(headers), body: new TextEncoder().encode(body), now: new Date() });
        return identity.items?.[0]?.eventId ?? identity.eventId;
      };
      expect(verify('42'), id).toBe(verify('42'));
      expect(verify('42'), id).not.toBe(verify('43'));
      expect(() => buildSample(source, { eventId: '42', deliveryId: 'first' }), id).toThrow(SampleError);
    }
    const wamid = (eventId: string) => JSON.parse(buildSample(config.sources.meta!, { eventId }).body).entry[0].changes[0].value.messages[0].id;
    expect([wamid('42'), wamid('wamid.42')]).toEqual(['wamid.42', 'wamid.42']);
  });

  it('signs a sample each new adapter verifies, over the public URL and the path it is posted to for twilio and square', () => {
    for (const id of ['sms', 'pos', 'billing', 'store']) {
      const source = config.sources[id]!;
      const sent = () => {
        const sample = buildSample(source, { eventId: '42', path: `/in/${id}` });
        return createAdapter(source).verify({ headers: new Headers(sample.headers), body: Buffer.from(sample.body), now: new Date(), target: `/in/${id}` });
      };
      const identity = sent();
      expect(identity.eventId, id).toContain('42');
      // The same --event-id again is the same event.
      expect(sent().eventId, id).toBe(identity.eventId);
    }
    expect(() => buildSample(config.sources.pos!, { eventId: '1', deliveryId: 'first', path: '/in/pos' })).toThrow(/^--delivery-id: a square delivery has no ID/);
    expect(() => buildSample(config.sources.store!, { eventId: '1', deliveryId: 'first' })).toThrow(/^--delivery-id: a woocommerce delivery is named by its webhook/);
    expect(buildSample(config.sources.sms!, { eventId: '1', deliveryId: 'first', path: '/in/sms' }).headers['i-twilio-idempotency-token']).toBe('first');
  });
});

describe('send-sample for hubspot, gitlab, linear and typeform', () => {
  const { config: more } = parseConfig(
    JSON.stringify({
      sources: {
        crm: { adapter: 'hubspot', secrets: ['hs'], publicUrl: 'https://hooks.example.com', actions: { a: { url: 'https://a.example/' } } },
        code: { adapter: 'gitlab', secrets: ['gl'], actions: { a: { url: 'https://a.example/' } } },
        issues: { adapter: 'linear', secrets: ['ln'], actions: { a: { url: 'https://a.example/' } } },
        forms: { adapter: 'typeform', secrets: ['tf'], actions: { a: { url: 'https://a.example/' } } },
      },
    }),
    'test',
  );
  /** The sample as the gateway sees it, POSTed to /in/{source}. */
  const verified = (id: string, options: Parameters<typeof buildSample>[1]) => {
    const source = more.sources[id]!;
    const sample = buildSample(source, { ...options, path: `/in/${id}` });
    const adapter = createAdapter({ adapter: source.adapter, secrets: source.secrets, publicUrl: source.publicUrl });
    return adapter.verify({ headers: new Headers(sample.headers), body: Buffer.from(sample.body), now: new Date(), target: `/in/${id}` });
  };

  it.each(['crm', 'code', 'issues', 'forms'])('signs a %s sample as its sender does, and the same --event-id names the same event', (id) => {
    const first = verified(id, { eventId: '42' });
    const again = verified(id, { eventId: '42' });
    expect(again.eventId).toBe(first.eventId);
    expect(verified(id, { eventId: '43' }).eventId).not.toBe(first.eventId);
  });

  it('puts --delivery-id where gitlab and linear carry one, and refuses it for hubspot and typeform', () => {
    expect(verified('code', { eventId: '1', deliveryId: 'first' }).deliveryId).toBe('first');
    expect(verified('issues', { eventId: '1', deliveryId: 'first' }).deliveryId).toBe('first');
    expect(() => buildSample(more.sources.crm!, { eventId: '1', deliveryId: 'first' })).toThrow(SampleError);
    expect(() => buildSample(more.sources.forms!, { eventId: '1', deliveryId: 'first' })).toThrow(SampleError);
  });

  it('takes --topic as the topic the adapter reads', () => {
    expect(verified('crm', { topic: 'deal.creation' }).items![0]!.topic).toBe('deal.creation');
    expect(verified('code', { topic: 'merge_request' }).topic).toBe('merge_request');
    expect(verified('issues', { topic: 'Comment.remove' }).topic).toBe('Comment.remove');
    expect(verified('forms', { topic: 'form_response_partial' }).topic).toBe('form_response_partial');
  });
});
