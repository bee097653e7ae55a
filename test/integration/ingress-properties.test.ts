/**
 * The adapter properties (test/unit/adapters/properties.test.ts), through the real server and the real
 * database: whatever arrives — headers, bodies, encodings, chunking, signature shapes — the answer is never a
 * 5xx, and nothing is recorded unless the request verified.
 */
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { sql } from 'drizzle-orm';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InboundRequest } from '../../adapters/types.ts';
import { headerName, headerValue, signedBody } from '../support/arbitraries.ts';
import { engine } from '../support/engine.ts';
import { rows } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import * as fixtures from '../unit/adapters/fixtures.ts';

const ACTIONS = { crm: { url: 'http://127.0.0.1:9/crm', idempotency: 'key' } };
/** Each source, and a request validly signed over a body, now (the server checks timestamps against its clock). */
const SOURCES: Record<string, { config: object; signed(body: string): InboundRequest | Promise<InboundRequest> }> = {
  shopify: { config: { adapter: 'shopify', secrets: [fixtures.SHOPIFY_SECRET] }, signed: (body) => fixtures.shopifyRequest({ body }) },
  flow: { config: { adapter: 'shopify-flow', secrets: [fixtures.SHOPIFY_SECRET] }, signed: (body) => fixtures.flowRequest({ body }) },
  stripe: {
    config: { adapter: 'stripe', secrets: [fixtures.STRIPE_SECRET] },
    signed: (payload) => fixtures.stripeRequest({ payload, timestamp: fixtures.unixSeconds(new Date()) }),
  },
  github: { config: { adapter: 'github', secrets: [fixtures.GITHUB_SECRET] }, signed: (body) => fixtures.githubRequest({ body }) },
  standard: {
    config: { adapter: 'standard-webhooks', secrets: [fixtures.STANDARD_SECRET] },
    signed: (payload) => fixtures.standardRequest({ payload, timestamp: new Date(), id: `msg_${Math.random().toString(36).slice(2)}` }),
  },
  generic: {
    config: { adapter: 'generic-hmac', secrets: [fixtures.GENERIC_SECRET], hmac: fixtures.GENERIC_OPTIONS },
    signed: (body) => fixtures.genericRequest(fixtures.GENERIC_OPTIONS, { body, timestamp: fixtures.unixSeconds(new Date()) }),
  },
  'generic-headers': {
    config: { adapter: 'generic-hmac', secrets: [fixtures.GENERIC_SECRET], hmac: fixtures.GENERIC_HEADER_OPTIONS },
    signed: (body) =>
      fixtures.genericRequest(fixtures.GENERIC_HEADER_OPTIONS, {
        body,
        headers: { 'X-Hook-Event': `e-${Math.random()}`, 'X-Hook-Topic': 'ping', 'X-Hook-Time': String(fixtures.unixSeconds(new Date())) },
      }),
  },
  // Signed over fixtures.PUBLIC_URL and the path (and query) each request is sent to.
  twilio: { config: { adapter: 'twilio', secrets: [fixtures.TWILIO_TOKEN], publicUrl: fixtures.PUBLIC_URL }, signed: (body) => fixtures.twilioJsonRequest({ body, path: '/in/twilio' }) },
  square: { config: { adapter: 'square', secrets: [fixtures.SQUARE_KEY], publicUrl: fixtures.PUBLIC_URL }, signed: (body) => fixtures.squareRequest({ body, path: '/in/square' }) },
  paddle: { config: { adapter: 'paddle', secrets: [fixtures.PADDLE_SECRET] }, signed: (body) => fixtures.paddleRequest({ body, timestamp: fixtures.unixSeconds(new Date()) }) },
  woocommerce: { config: { adapter: 'woocommerce', secrets: [fixtures.WOOCOMMERCE_SECRET] }, signed: (body) => fixtures.woocommerceRequest({ body }) },
  // Signed over the public URL with the path the server sees: /in/hubspot.
  hubspot: {
    config: { adapter: 'hubspot', secrets: [fixtures.HUBSPOT_SECRET], publicUrl: fixtures.HUBSPOT_PUBLIC_URL },
    signed: (body) => fixtures.hubspotRequest({ body, target: '/in/hubspot', now: new Date() }),
  },
  gitlab: { config: { adapter: 'gitlab', secrets: [fixtures.GITLAB_TOKEN] }, signed: (body) => fixtures.gitlabRequest({ body }) },
  linear: { config: { adapter: 'linear', secrets: [fixtures.LINEAR_SECRET] }, signed: (body) => fixtures.linearRequest({ body, now: new Date() }) },
  typeform: { config: { adapter: 'typeform', secrets: [fixtures.TYPEFORM_SECRET] }, signed: (body) => fixtures.typeformRequest({ body }) },
};

/** Two HubSpot events in one delivery: each is recorded with a receipt of its own. */
const BATCH_OF_TWO = JSON.stringify([
  { portalId: 62515, subscriptionId: 1001, eventId: 7001, subscriptionType: 'contact.creation' },
  { portalId: 62515, subscriptionId: 1001, eventId: 7002, subscriptionType: 'contact.creation' },
]);

let gateway: TestGateway;
/** Receipts answered 200: the only ones that may be stored. */
const verified = new Set<string>();

beforeAll(async () => {
  const sources = Object.fromEntries(Object.entries(SOURCES).map(([id, { config }]) => [id, { ...config, actions: ACTIONS, maxBodyBytes: 4096 }]));
  // The forwarder would only add noise: what is under test is the door.
  gateway = await startTestGateway({ sources }, { role: 'web' });
});
afterAll(async () => gateway?.close());

/** How the bytes travel: their declared type and encoding, and whether they are chunked (no Content-Length). */
const framing = fc.record({
  contentType: fc.constantFrom(undefined, 'application/json', 'application/json; charset=utf-16', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'),
  contentEncoding: fc.constantFrom(undefined, 'gzip', 'br', 'identity', 'x-bogus'),
  chunked: fc.boolean(),
});
const anyBody = fc.oneof(
  fc.uint8Array({ maxLength: 600 }),
  fc.json().map((text) => Buffer.from(text)),
  fc.string({ unit: 'binary', maxLength: 300 }).map((text) => Buffer.from(text)),
  fc.constant(Buffer.from('{"a":'.repeat(100))),
  fc.constant(Buffer.alloc(5000, 0x20)),
);
async function send(source: string, headers: Record<string, string>, body: Uint8Array, chunked: boolean, target = `/in/${source}`) {
  const { statusCode, body: answer } = await request(`${gateway.url}${target}`, {
    method: 'POST',
    headers,
    body: chunked ? Readable.from([Buffer.from(body)]) : Buffer.from(body),
  });
  const text = await answer.text();
  return { status: statusCode, json: text.startsWith('{') ? JSON.parse(text) : null };
}

describe.each(Object.keys(SOURCES))(`ingress properties (${engine()}): %s`, (source) => {
  it('answers any request it cannot verify with a 4xx, and records nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.dictionary(headerName, headerValue, { maxKeys: 8 }), anyBody, framing, async (headers, body, frame) => {
        const all = { ...headers, ...(frame.contentType ? { 'content-type': frame.contentType } : {}), ...(frame.contentEncoding ? { 'content-encoding': frame.contentEncoding } : {}) };
        const answer = await send(source, all, body, frame.chunked);
        expect([400, 401, 413]).toContain(answer.status);
      }),
      { numRuns: 40 },
    );
  });

  it('answers a validly signed request, whatever its body and extra headers, with 200 or 400 — never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(signedBody, fc.dictionary(headerName, headerValue, { maxKeys: 3 }), fc.boolean(), async (body, extra, chunked) => {
        const signed = await SOURCES[source]!.signed(body);
        const headers: Record<string, string> = { ...extra };
        signed.headers.forEach((value, name) => (headers[name] = value));
        const answer = await send(source, headers, signed.body, chunked, signed.target);
        expect([200, 400], JSON.stringify(answer.json)).toContain(answer.status);
        // A batch (HubSpot's list of events) is answered with a receipt for each item, and no receipt of its own.
        if (answer.status === 200) for (const receipt of answer.json.items?.map((item: { receipt: string }) => item.receipt) ?? [answer.json.receipt]) verified.add(receipt);
      }),
      // The generator makes a valid batch only now and then; one is always tried, so its receipts are always counted.
      { numRuns: 30, examples: source === 'hubspot' ? [[BATCH_OF_TWO, {}, false]] : [] },
    );
  });
});

describe(`what the properties left behind (${engine()})`, () => {
  it('every receipt and task comes from a request that verified', async () => {
    // The stray rows' source and IDs, so that a rare failure says which sender's request it was.
    const receipts = await rows<{ id: string; source: string; delivery_id: string; event_id: string; decision: string }>(
      gateway.store.db,
      sql`select id, source, delivery_id, event_id, decision from deliveries`,
    );
    expect(receipts.filter((r) => !verified.has(r.id))).toEqual([]);
    const [orphans] = await rows<{ n: number }>(
      gateway.store.db,
      sql`select count(*)::int as n from tasks t where not exists (select 1 from deliveries d where d.id = t.delivery_id)`,
    );
    expect(orphans!.n).toBe(0);
    expect(verified.size).toBeGreaterThan(0);
  });
});
