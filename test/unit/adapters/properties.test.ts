/**
 * Properties every adapter keeps whatever arrives: it answers only with SignatureError (401) or InputError
 * (400), never leaks a secret in a message, and never accepts a body that differs from the signed one.
 */
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createAdapter } from '../../../adapters/index.ts';
import type { Adapter, InboundRequest } from '../../../adapters/types.ts';
import { InputError, SignatureError } from '../../../src/errors.ts';
import { headerName, headerValue, signedBody } from '../../support/arbitraries.ts';
import {
  GENERIC_HEADER_OPTIONS,
  GENERIC_OPTIONS,
  GENERIC_SECRET,
  GITHUB_SECRET,
  GITLAB_TOKEN,
  HUBSPOT_PUBLIC_URL,
  HUBSPOT_SECRET,
  LINEAR_SECRET,
  NOW,
  PADDLE_SECRET,
  PUBLIC_URL,
  SHOPIFY_SECRET,
  SQUARE_KEY,
  TWILIO_TOKEN,
  WOOCOMMERCE_SECRET,
  STANDARD_SECRET,
  STRIPE_SECRET,
  TYPEFORM_SECRET,
  flowRequest,
  genericRequest,
  githubRequest,
  gitlabRequest,
  hubspotRequest,
  inbound,
  paddleRequest,
  linearRequest,
  shopifyRequest,
  squareRequest,
  standardRequest,
  stripeRequest,
  twilioJsonRequest,
  typeformRequest,
  unixSeconds,
  woocommerceRequest,
} from './fixtures.ts';

interface Case {
  label: string;
  adapter: Adapter;
  secret: string;
  /** A request validly signed over `body`, with every identity header the scheme has. */
  signed(body: string): InboundRequest | Promise<InboundRequest>;
  /** Headers that carry identities rather than the signature; dropping them must never cost the signature. */
  identityHeaders: string[];
  /** False for a scheme that authenticates the sender but not the body (GitLab's token). */
  signsBody?: false;
}

const adapterFor = (adapter: Parameters<typeof createAdapter>[0]['adapter'], secret: string, hmac = GENERIC_OPTIONS) =>
  createAdapter({ adapter, secrets: [secret], hmac, verifyToken: 'verify-token', publicUrl: PUBLIC_URL });

const hexHmac = (secret: string, ...parts: string[]) => parts.reduce((mac, part) => mac.update(part), createHmac('sha256', secret)).digest('hex');
const SENDER_SECRET = 'sender-secret-0123456789';

const cases: Case[] = [
  {
    label: 'shopify',
    adapter: adapterFor('shopify', SHOPIFY_SECRET),
    secret: SHOPIFY_SECRET,
    signed: (body) => shopifyRequest({ body }),
    identityHeaders: ['x-shopify-webhook-id', 'x-shopify-event-id', 'x-shopify-topic', 'x-shopify-triggered-at'],
  },
  {
    label: 'shopify-flow',
    adapter: adapterFor('shopify-flow', SHOPIFY_SECRET),
    secret: SHOPIFY_SECRET,
    signed: (body) => flowRequest({ body }),
    identityHeaders: [],
  },
  {
    label: 'stripe',
    adapter: adapterFor('stripe', STRIPE_SECRET),
    secret: STRIPE_SECRET,
    signed: (payload) => stripeRequest({ payload }),
    identityHeaders: [],
  },
  {
    label: 'github',
    adapter: adapterFor('github', GITHUB_SECRET),
    secret: GITHUB_SECRET,
    signed: (body) => githubRequest({ body }),
    identityHeaders: ['x-github-delivery', 'x-github-hook-id', 'x-github-event'],
  },
  {
    label: 'standard-webhooks',
    adapter: adapterFor('standard-webhooks', STANDARD_SECRET),
    secret: STANDARD_SECRET,
    signed: (payload) => standardRequest({ payload }),
    identityHeaders: [],
  },
  {
    label: 'generic-hmac (timestamped, pointers)',
    adapter: adapterFor('generic-hmac', GENERIC_SECRET),
    secret: GENERIC_SECRET,
    signed: (body) => genericRequest(GENERIC_OPTIONS, { body }),
    identityHeaders: ['x-acme-delivery'],
  },
  {
    label: 'generic-hmac (headers only)',
    adapter: adapterFor('generic-hmac', GENERIC_SECRET, GENERIC_HEADER_OPTIONS),
    secret: GENERIC_SECRET,
    signed: (body) =>
      genericRequest(GENERIC_HEADER_OPTIONS, {
        body,
        headers: { 'X-Hook-Event': 'e-1', 'X-Hook-Topic': 'ping', 'X-Hook-Time': String(unixSeconds(NOW)) },
      }),
    identityHeaders: ['x-hook-event', 'x-hook-topic', 'x-hook-time'],
  },
  {
    label: 'twitch',
    adapter: adapterFor('twitch', SENDER_SECRET),
    secret: SENDER_SECRET,
    signed: (body) => {
      const [id, sent] = ['e76c6bd4-55c9-4987-8304-da1588d8988b', NOW.toISOString()];
      return inbound(
        {
          'Twitch-Eventsub-Message-Id': id,
          'Twitch-Eventsub-Message-Timestamp': sent,
          'Twitch-Eventsub-Message-Type': 'notification',
          'Twitch-Eventsub-Message-Retry': '0',
          'Twitch-Eventsub-Subscription-Type': 'channel.follow',
          'Twitch-Eventsub-Message-Signature': `sha256=${hexHmac(SENDER_SECRET, id, sent, body)}`,
        },
        body,
      );
    },
    identityHeaders: ['twitch-eventsub-message-retry', 'twitch-eventsub-subscription-type'],
  },
  {
    label: 'zoom',
    adapter: adapterFor('zoom', SENDER_SECRET),
    secret: SENDER_SECRET,
    signed: (body) => {
      const timestamp = String(unixSeconds(NOW));
      return inbound({ 'x-zm-request-timestamp': timestamp, 'x-zm-signature': `v0=${hexHmac(SENDER_SECRET, `v0:${timestamp}:`, body)}` }, body);
    },
    identityHeaders: [],
  },
  {
    label: 'meta',
    adapter: adapterFor('meta', SENDER_SECRET),
    secret: SENDER_SECRET,
    signed: (body) => inbound({ 'X-Hub-Signature-256': `sha256=${hexHmac(SENDER_SECRET, body)}` }, body),
    identityHeaders: [],
  },
  // A form body's signature covers its parameters, not its bytes (`a=1&` signs as `a=1`): that scheme's own
  // property is in twilio.test.ts. A JSON body's bytes are signed through its bodySHA256.
  {
    label: 'twilio (JSON, bodySHA256)',
    adapter: adapterFor('twilio', TWILIO_TOKEN),
    secret: TWILIO_TOKEN,
    signed: (body) => twilioJsonRequest({ body }),
    identityHeaders: [],
  },
  {
    label: 'square',
    adapter: adapterFor('square', SQUARE_KEY),
    secret: SQUARE_KEY,
    signed: (body) => squareRequest({ body }),
    identityHeaders: [],
  },
  {
    label: 'paddle',
    adapter: adapterFor('paddle', PADDLE_SECRET),
    secret: PADDLE_SECRET,
    signed: (body) => paddleRequest({ body }),
    identityHeaders: [],
  },
  {
    label: 'woocommerce',
    adapter: adapterFor('woocommerce', WOOCOMMERCE_SECRET),
    secret: WOOCOMMERCE_SECRET,
    signed: (body) => woocommerceRequest({ body }),
    identityHeaders: ['x-wc-webhook-topic', 'x-wc-webhook-id', 'x-wc-webhook-delivery-id'],
  },
  {
    label: 'hubspot',
    adapter: createAdapter({ adapter: 'hubspot', secrets: [HUBSPOT_SECRET], publicUrl: HUBSPOT_PUBLIC_URL }),
    secret: HUBSPOT_SECRET,
    signed: (body) => hubspotRequest({ body }),
    identityHeaders: [],
  },
  {
    label: 'gitlab',
    adapter: adapterFor('gitlab', GITLAB_TOKEN),
    secret: GITLAB_TOKEN,
    signed: (body) => gitlabRequest({ body }),
    identityHeaders: ['x-gitlab-event-uuid', 'idempotency-key', 'x-gitlab-event'],
    signsBody: false,
  },
  {
    label: 'linear',
    adapter: adapterFor('linear', LINEAR_SECRET),
    secret: LINEAR_SECRET,
    signed: (body) => linearRequest({ body }),
    identityHeaders: ['linear-delivery', 'linear-event'],
  },
  {
    label: 'typeform',
    adapter: adapterFor('typeform', TYPEFORM_SECRET),
    secret: TYPEFORM_SECRET,
    signed: (body) => typeformRequest({ body }),
    identityHeaders: [],
  },
];

const encode = (text: string) => new TextEncoder().encode(text);
const anyBody = fc.oneof(
  fc.uint8Array({ maxLength: 300 }),
  fc.json().map(encode),
  fc.string({ unit: 'binary', maxLength: 200 }).map(encode),
);

/** Changes the body by at least one byte: a flipped bit, an extra byte, or a dropped tail. */
const alteration = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('append' as const), byte: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant('truncate' as const), count: fc.integer({ min: 1, max: 20 }) }),
);
type Alteration = typeof alteration extends fc.Arbitrary<infer A> ? A : never;

function alter(body: Uint8Array, change: Alteration): Uint8Array {
  if (change.kind === 'flip' && body.length > 0) {
    const copy = Uint8Array.from(body);
    const at = change.at % body.length;
    copy[at] = (copy[at] ?? 0) ^ (1 << change.bit);
    return copy;
  }
  if (change.kind === 'truncate' && body.length > 0) return body.slice(0, Math.max(0, body.length - change.count));
  return Uint8Array.of(...body, change.kind === 'append' ? change.byte : 0x20);
}

/** Runs verify; any outcome but an Identity, a SignatureError or an InputError fails the property. */
function outcome(adapter: Adapter, request: InboundRequest, secret: string): 'verified' | SignatureError | InputError {
  try {
    const identity = adapter.verify(request);
    for (const id of [identity.deliveryId, identity.eventId]) {
      expect(id.length).toBeGreaterThan(0);
      expect(id.length).toBeLessThanOrEqual(255);
      expect(id).toBe(id.trim());
    }
    return 'verified';
  } catch (error) {
    if (!(error instanceof SignatureError || error instanceof InputError)) throw error;
    expect(error.message).not.toContain(secret);
    return error;
  }
}

describe.each(cases)('$label adapter properties', ({ adapter, secret, signed, identityHeaders, signsBody }) => {
  it('answers arbitrary headers and bodies only with 401 or 400', () => {
    fc.assert(
      fc.property(
        fc.dictionary(headerName, headerValue, { maxKeys: 8 }),
        anyBody,
        fc.date({ min: new Date(0), max: new Date('2100-01-01'), noInvalidDate: true }),
        (headers, body, now) => {
          outcome(adapter, inbound(headers, body, now), secret);
        },
      ),
    );
  });

  it('never refuses the signature of a validly signed request, whatever the body or missing identity headers', async () => {
    await fc.assert(
      fc.asyncProperty(signedBody, fc.subarray(identityHeaders), async (body, dropped) => {
        const request = await signed(body);
        for (const name of dropped) request.headers.delete(name);
        expect(outcome(adapter, request, secret)).not.toBeInstanceOf(SignatureError);
      }),
    );
  });

  // A token authenticates whoever holds it, whatever they send: GitLab's scheme has the opposite property, stated as
  // such rather than skipped.
  const bodyProperty = signsBody === false ? 'verifies whatever body comes with the right token' : 'never verifies a body that differs from the signed one';
  it(bodyProperty, async () => {
    await fc.assert(
      fc.asyncProperty(signedBody, alteration, async (body, change) => {
        const request = await signed(body);
        const verdict = outcome(adapter, { ...request, body: alter(request.body, change) }, secret);
        if (signsBody === false) expect(verdict).not.toBeInstanceOf(SignatureError);
        else expect(verdict).toBeInstanceOf(SignatureError);
      }),
    );
  });
});
