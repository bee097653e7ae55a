/**
 * What every sender module owes, one row per sender: the config takes a source of it, the registry builds its
 * adapter, which accepts a delivery signed apart from the module (with the sender's own library where one exists)
 * and refuses one signed with another secret, and the module signs a sample its adapter accepts, the same
 * `--event-id` naming the same event. A sender's own behaviour has its own file beside this one.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ADAPTER_NAMES, createAdapter, type AdapterName } from '../../../adapters/index.ts';
import type { InboundRequest } from '../../../adapters/types.ts';
import { buildSample } from '../../../src/cli/sample.ts';
import { configSchema } from '../../../src/config/schema.ts';
import type { Delivery } from '../../support/deliveries.ts';
import { metaDelivery, sendgridSigner, slackDelivery, twilioDelivery, twitchDelivery, zoomDelivery } from '../../support/signers.ts';
import {
  expectSignatureError,
  flowRequest,
  GENERIC_OPTIONS,
  GENERIC_SECRET,
  genericRequest,
  githubRequest,
  GITHUB_SECRET,
  GITLAB_TOKEN,
  gitlabRequest,
  HUBSPOT_SECRET,
  hubspotRequest,
  LINEAR_SECRET,
  linearRequest,
  PADDLE_SECRET,
  paddleRequest,
  PUBLIC_URL,
  SHOPIFY_SECRET,
  shopifyRequest,
  SQUARE_KEY,
  squareRequest,
  STANDARD_SECRET,
  standardRequest,
  STRIPE_SECRET,
  stripeRequest,
  TYPEFORM_SECRET,
  typeformRequest,
  WOOCOMMERCE_SECRET,
  woocommerceRequest,
} from './fixtures.ts';

interface Row {
  /** The source as a config gives it, without its actions. */
  source: { secrets: string[]; publicUrl?: string; verifyToken?: string; hmac?: object };
  /** A delivery signed with the source's secret, or (`forged`) with another, by code that is not the module's. */
  signed(forged: boolean): InboundRequest | Promise<InboundRequest>;
  /** Why the module signs no sample, where only the sender can sign. */
  noSample?: true;
}

const now = (delivery: Delivery, target?: string): InboundRequest => ({
  headers: new Headers(delivery.headers),
  body: new TextEncoder().encode(delivery.body),
  now: new Date(),
  ...(target === undefined ? {} : { target }),
});
const OTHER_STANDARD_SECRET = `whsec_${Buffer.from('another key').toString('base64')}`;
const sendgridKeys = sendgridSigner();
const otherSendgridKeys = sendgridSigner();

const SENDERS: Record<AdapterName, Row> = {
  shopify: { source: { secrets: [SHOPIFY_SECRET] }, signed: (forged) => shopifyRequest({ secret: forged ? 'other' : SHOPIFY_SECRET }) },
  'shopify-flow': { source: { secrets: [SHOPIFY_SECRET] }, signed: (forged) => flowRequest({ secret: forged ? 'other' : SHOPIFY_SECRET }) },
  stripe: { source: { secrets: [STRIPE_SECRET] }, signed: (forged) => stripeRequest({ secret: forged ? 'whsec_other' : STRIPE_SECRET }) },
  github: { source: { secrets: [GITHUB_SECRET] }, signed: (forged) => githubRequest({ secret: forged ? 'other' : GITHUB_SECRET }) },
  'standard-webhooks': {
    source: { secrets: [STANDARD_SECRET] },
    signed: (forged) => standardRequest({ secret: forged ? OTHER_STANDARD_SECRET : STANDARD_SECRET }),
  },
  'generic-hmac': {
    source: { secrets: [GENERIC_SECRET], hmac: GENERIC_OPTIONS },
    signed: (forged) => genericRequest(GENERIC_OPTIONS, { secret: forged ? 'other' : GENERIC_SECRET }),
  },
  slack: {
    source: { secrets: ['slack-signing-secret'] },
    signed: (forged) => now(slackDelivery(forged ? 'other' : 'slack-signing-secret', { type: 'event_callback', event_id: 'Ev1', event: { type: 'app_mention' } })),
  },
  sendgrid: {
    source: { secrets: [sendgridKeys.key] },
    signed: (forged) => now((forged ? otherSendgridKeys : sendgridKeys).delivery([{ sg_event_id: 'sg1', event: 'open', timestamp: 1714564790 }])),
    noSample: true,
  },
  twitch: {
    source: { secrets: ['twitch-secret-0123'] },
    signed: (forged) =>
      now(twitchDelivery(forged ? 'other-secret-0123' : 'twitch-secret-0123', 'notification', { subscription: { type: 'channel.follow' }, event: { user_id: '1' } }, 'msg-1')),
  },
  zoom: {
    source: { secrets: ['zoom-secret-token'] },
    signed: (forged) => now(zoomDelivery(forged ? 'other' : 'zoom-secret-token', { event: 'meeting.started', event_ts: 1714564790000, payload: { object: { id: '1' } } })),
  },
  meta: {
    source: { secrets: ['app-secret'], verifyToken: 'verify-token' },
    signed: (forged) => now(metaDelivery(forged ? 'other' : 'app-secret', { object: 'page', entry: [{ id: 'p1', time: 1, changes: [{ field: 'feed', value: {} }] }] })),
  },
  twilio: {
    source: { secrets: ['twilio-token'], publicUrl: PUBLIC_URL },
    signed: (forged) =>
      now(twilioDelivery(forged ? 'other' : 'twilio-token', `${PUBLIC_URL}/in/twilio`, { MessageSid: 'SM0123456789abcdef', MessageStatus: 'delivered' }), '/in/twilio'),
  },
  square: { source: { secrets: [SQUARE_KEY], publicUrl: PUBLIC_URL }, signed: (forged) => squareRequest({ key: forged ? 'other' : SQUARE_KEY }) },
  paddle: { source: { secrets: [PADDLE_SECRET] }, signed: (forged) => paddleRequest({ secret: forged ? 'other' : PADDLE_SECRET }) },
  woocommerce: { source: { secrets: [WOOCOMMERCE_SECRET] }, signed: (forged) => woocommerceRequest({ secret: forged ? 'other' : WOOCOMMERCE_SECRET }) },
  hubspot: {
    source: { secrets: [HUBSPOT_SECRET], publicUrl: PUBLIC_URL },
    signed: (forged) =>
      hubspotRequest({ body: JSON.stringify([{ eventId: 1, subscriptionId: 2, portalId: 3, subscriptionType: 'contact.creation' }]), secret: forged ? 'other' : HUBSPOT_SECRET }),
  },
  gitlab: { source: { secrets: [GITLAB_TOKEN] }, signed: (forged) => gitlabRequest({ body: '{"object_kind":"push"}', token: forged ? 'other' : GITLAB_TOKEN }) },
  linear: {
    source: { secrets: [LINEAR_SECRET] },
    signed: (forged) => linearRequest({ body: JSON.stringify({ type: 'Issue', action: 'create', createdAt: '2024-05-01T11:59:00.000Z' }), secret: forged ? 'other' : LINEAR_SECRET }),
  },
  typeform: {
    source: { secrets: [TYPEFORM_SECRET] },
    signed: (forged) => typeformRequest({ body: JSON.stringify({ event_id: 'tf1', event_type: 'form_response' }), secret: forged ? 'other' : TYPEFORM_SECRET }),
  },
  pagerduty: {
    source: { secrets: ['pagerduty-secret'] },
    signed: (forged) => {
      const body = JSON.stringify({ event: { id: '01DEN3YMKJRO1EBL', event_type: 'incident.triggered', occurred_at: '2024-05-01T11:59:00.000Z' } });
      const signature = `v1=${createHmac('sha256', forged ? 'other' : 'pagerduty-secret').update(body).digest('hex')}`;
      return now({ body, headers: { 'content-type': 'application/json', 'x-pagerduty-signature': signature, 'x-webhook-id': 'whk-1' } });
    },
  },
};

/** The source as the config check leaves it, under the sender's own name. */
function sourceOf(name: AdapterName) {
  const config = configSchema.parse({ sources: { [name]: { adapter: name, ...SENDERS[name].source, actions: { a: { url: 'https://a.example/' } } } } });
  return config.sources[name]!;
}

describe('each sender', () => {
  it('has a row here, as it has a module in the registry', () => {
    expect(Object.keys(SENDERS).sort()).toEqual([...ADAPTER_NAMES].sort());
  });

  it.each(ADAPTER_NAMES)('%s: verifies a delivery signed apart from its module, and refuses one signed with another secret', async (name) => {
    const adapter = createAdapter(sourceOf(name));
    expect(adapter.name).toBe(name);
    expect(adapter.verify(await SENDERS[name].signed(false)).eventId).not.toBe('');
    const forged = await SENDERS[name].signed(true);
    expectSignatureError(() => adapter.verify(forged));
  });

  it.each(ADAPTER_NAMES.filter((name) => !SENDERS[name].noSample))('%s: signs a sample its adapter verifies, one --event-id one event', (name) => {
    const source = sourceOf(name);
    const adapter = createAdapter(source);
    const eventOf = (eventId: string) => {
      const target = `/in/${name}`;
      const sample = buildSample(source, { eventId, path: target });
      const identity = adapter.verify({ headers: new Headers(sample.headers), body: new TextEncoder().encode(sample.body), now: new Date(), target });
      return identity.items?.[0]?.eventId ?? identity.eventId;
    };
    expect(eventOf('42')).toBe(eventOf('42'));
    expect(eventOf('43')).not.toBe(eventOf('42'));
  });
});
