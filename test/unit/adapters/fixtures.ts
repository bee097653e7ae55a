/**
 * One builder per sender that makes a valid signed request (signed with the sender's own library where one
 * exists), and small helpers that each break exactly one thing about it.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { Signature } from '@hubspot/api-client';
import { sign as githubSign } from '@octokit/webhooks-methods';
import { getExpectedBodyHash, getExpectedTwilioSignature } from 'twilio/lib/webhooks/webhooks.js';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { expect } from 'vitest';
import type { InboundRequest } from '../../../adapters/types.ts';
import { genericHmacSchema, type GenericHmacOptions } from '../../../adapters/generic-hmac.ts';
import { InputError, SignatureError } from '../../../src/errors.ts';

export const NOW = new Date('2024-05-01T12:00:00.000Z');
export const unixSeconds = (date: Date): number => Math.floor(date.getTime() / 1000);
export const secondsFrom = (date: Date, seconds: number): Date => new Date(date.getTime() + seconds * 1000);

export function inbound(headers: Record<string, string>, body: string | Uint8Array, now = NOW): InboundRequest {
  return { headers: new Headers(headers), body: typeof body === 'string' ? new TextEncoder().encode(body) : body, now };
}

/** Sets or (with null) removes one header. */
export function withHeader(request: InboundRequest, name: string, value: string | null): InboundRequest {
  const headers = new Headers(request.headers);
  if (value === null) headers.delete(name);
  else headers.set(name, value);
  return { ...request, headers };
}

/** The same request, its body with one byte changed (or one added to an empty body); the signature is kept. */
export function withAlteredByte(request: InboundRequest, index = Math.floor(request.body.length / 2)): InboundRequest {
  if (request.body.length === 0) return { ...request, body: Uint8Array.of(0x20) };
  const body = Uint8Array.from(request.body);
  body[index] = (body[index] ?? 0) ^ 0x01;
  return { ...request, body };
}

export function withNow(request: InboundRequest, now: Date): InboundRequest {
  return { ...request, now };
}

/** Header names as a careless sender might spell them: "x-ShOpIfY-…". */
export function withOddCaseHeaderNames(request: InboundRequest): InboundRequest {
  const oddCase = (name: string) =>
    [...name].map((c, i) => (i % 2 === 0 ? c.toLowerCase() : c.toUpperCase())).join('');
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => {
    headers[oddCase(name)] = value;
  });
  return { ...request, headers: new Headers(headers) };
}

/** What `verify` threw; it fails the test if it returned. */
export function thrown(verify: () => unknown): unknown {
  try {
    verify();
  } catch (error) {
    return error;
  }
  throw new Error('expected it to throw, but it returned');
}

/** Asserts a 401 and returns its message, so a test can check what the sender is told. */
export function expectSignatureError(verify: () => unknown): string {
  const error = thrown(verify);
  expect(error).toBeInstanceOf(SignatureError);
  expect(error).toMatchObject({ status: 401, code: 'invalid_signature' });
  return (error as SignatureError).message;
}

/** Asserts a 401 and returns which check refused the request (`signature`, `timestamp`, `missing_header`…). */
export function failedCheck(verify: () => unknown): string {
  const error = thrown(verify);
  expect(error).toBeInstanceOf(SignatureError);
  return (error as SignatureError).check;
}

export function expectInputError(verify: () => unknown, code: string): string {
  const error = thrown(verify);
  expect(error).toBeInstanceOf(InputError);
  expect(error).toMatchObject({ status: 400, code });
  return (error as InputError).message;
}

const hmac = (algorithm: string, secret: string, encoding: 'hex' | 'base64', payload: string | Uint8Array) =>
  createHmac(algorithm, secret).update(payload).digest(encoding);

// Shopify and Flow have no signing library: node:crypto, as Shopify's own examples do.

export const SHOPIFY_SECRET = 'shpss_0123456789abcdef';
export const SHOPIFY_BODY = JSON.stringify({ id: 820982911946154500, email: 'jon@example.com', total_price: '10.00' });
export const SHOPIFY_IDS = {
  webhookId: 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
  eventId: '98880550-7158-44d4-b7cd-2c97c8a091b5',
  topic: 'orders/create',
  triggeredAt: '2024-05-01T11:59:58.123Z',
};

export function shopifyRequest(
  options: { secret?: string; body?: string | Uint8Array; prefix?: 'X-Shopify-' | 'shopify-' } = {},
): InboundRequest {
  const { secret = SHOPIFY_SECRET, body = SHOPIFY_BODY, prefix = 'X-Shopify-' } = options;
  return inbound(
    {
      'Content-Type': 'application/json',
      [`${prefix}Hmac-Sha256`]: hmac('sha256', secret, 'base64', body),
      [`${prefix}Webhook-Id`]: SHOPIFY_IDS.webhookId,
      [`${prefix}Event-Id`]: SHOPIFY_IDS.eventId,
      [`${prefix}Topic`]: SHOPIFY_IDS.topic,
      [`${prefix}Triggered-At`]: SHOPIFY_IDS.triggeredAt,
    },
    body,
  );
}

export const FLOW_BODY = JSON.stringify({
  shop_id: 63160304873,
  shopify_domain: 'example.myshopify.com',
  action_run_id: 'bb8db4ea-9ab6-4b2a-bf5b-d2d41b8bbd4e',
  action_definition_id: 'send-to-crm',
  handle: 'send-to-crm',
  properties: { customer_id: 'gid://shopify/Customer/1' },
});

export function flowRequest(options: { secret?: string; body?: string } = {}): InboundRequest {
  const { secret = SHOPIFY_SECRET, body = FLOW_BODY } = options;
  return inbound(
    { 'Content-Type': 'application/json', 'X-Shopify-Hmac-Sha256': hmac('sha256', secret, 'base64', body) },
    body,
  );
}

const stripeClient = new Stripe('sk_test_x');

export const STRIPE_SECRET = 'whsec_stripe_test_0123456789';
export const STRIPE_BODY = JSON.stringify({
  id: 'evt_1PBkzA2eZvKYlo2CQ1v5W6Xh',
  object: 'event',
  type: 'payment_intent.succeeded',
  created: 1714564790,
  data: { object: { id: 'pi_3PBkz92eZvKYlo2C0' } },
});

export function stripeRequest(
  options: { secret?: string; payload?: string; timestamp?: number; scheme?: string } = {},
): InboundRequest {
  const { secret = STRIPE_SECRET, payload = STRIPE_BODY, timestamp = unixSeconds(NOW), scheme } = options;
  const signature = stripeClient.webhooks.generateTestHeaderString({
    payload,
    secret,
    timestamp,
    ...(scheme === undefined ? {} : { scheme }),
  });
  return inbound({ 'Content-Type': 'application/json; charset=utf-8', 'Stripe-Signature': signature }, payload);
}

export const GITHUB_SECRET = 'github-webhook-secret';
export const GITHUB_BODY = JSON.stringify({ action: 'opened', issue: { number: 1347 }, repository: { id: 1296269 } });
export const GITHUB_IDS = { delivery: '72d3162e-cc78-11e3-81ab-4c9367dc0958', hookId: '292430182', event: 'issues' };

export async function githubRequest(
  options: { secret?: string; body?: string; contentType?: string } = {},
): Promise<InboundRequest> {
  const { secret = GITHUB_SECRET, body = GITHUB_BODY, contentType = 'application/json' } = options;
  return inbound(
    {
      'Content-Type': contentType,
      'X-Hub-Signature-256': await githubSign(secret, body),
      'X-GitHub-Delivery': GITHUB_IDS.delivery,
      'X-GitHub-Hook-ID': GITHUB_IDS.hookId,
      'X-GitHub-Event': GITHUB_IDS.event,
    },
    body,
  );
}

export const STANDARD_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
export const STANDARD_ID = 'msg_2Ku7qW1AxmVFhkUd0bsx8MZ1SZp';
export const STANDARD_BODY = JSON.stringify({
  type: 'invoice.paid',
  timestamp: '2024-05-01T11:59:59.000Z',
  data: { invoice: 'in_123' },
});

export function standardRequest(
  options: { secret?: string; id?: string; timestamp?: Date; payload?: string } = {},
): InboundRequest {
  const { secret = STANDARD_SECRET, id = STANDARD_ID, timestamp = NOW, payload = STANDARD_BODY } = options;
  return inbound(
    {
      'Content-Type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(unixSeconds(timestamp)),
      'webhook-signature': new Webhook(secret).sign(id, timestamp, payload),
    },
    payload,
  );
}

export const GENERIC_SECRET = 'generic-secret';

/** A sender in the style of many: a prefixed hex signature over "<timestamp>.<body>", IDs in headers and body. */
export const GENERIC_OPTIONS: GenericHmacOptions = genericHmacSchema.parse({
  signatureHeader: 'X-Acme-Signature',
  signaturePrefix: 'sha256=',
  timestampHeader: 'X-Acme-Timestamp',
  signedPayload: 'timestamp.body',
  deliveryId: { header: 'X-Acme-Delivery' },
  eventId: { pointer: '/event/id' },
  topic: { pointer: '/event/type' },
  occurredAt: { pointer: '/event/at' },
});
/** A plainer sender: base64 SHA-512 of the body alone, no timestamp, every identity in a header. */
export const GENERIC_HEADER_OPTIONS: GenericHmacOptions = genericHmacSchema.parse({
  signatureHeader: 'X-Hook-Signature',
  algorithm: 'sha512',
  encoding: 'base64',
  eventId: { header: 'X-Hook-Event' },
  topic: { header: 'X-Hook-Topic' },
  occurredAt: { header: 'X-Hook-Time' },
});

export const GENERIC_BODY = JSON.stringify({
  event: { id: 'evt_8891', type: 'order.paid', at: '2024-05-01T11:59:00.000Z' },
  order: { id: 42 },
});

export function genericRequest(
  options: GenericHmacOptions = GENERIC_OPTIONS,
  request: { secret?: string; body?: string; timestamp?: number; headers?: Record<string, string> } = {},
): InboundRequest {
  const { secret = GENERIC_SECRET, body = GENERIC_BODY, timestamp = unixSeconds(NOW), headers = {} } = request;
  const signed = options.signedPayload === 'timestamp.body' ? `${timestamp}.${body}` : body;
  const timestampHeader: Record<string, string> =
    options.timestampHeader === undefined ? {} : { [options.timestampHeader]: String(timestamp) };
  const deliveryHeader: Record<string, string> =
    options.deliveryId !== undefined && 'header' in options.deliveryId ? { [options.deliveryId.header]: 'dlv_5521' } : {};
  return inbound(
    {
      'Content-Type': 'application/json',
      [options.signatureHeader]: options.signaturePrefix + hmac(options.algorithm, secret, options.encoding, signed),
      ...timestampHeader,
      ...deliveryHeader,
      ...headers,
    },
    body,
  );
}

// Senders that sign the URL they call: the public origin a source declares, and the path it is called at.
export const PUBLIC_URL = 'https://hooks.example.com';

export const TWILIO_TOKEN = 'twilio-auth-token';

/** A JSON body as Twilio signs one, with the `twilio` SDK: the URL alone, carrying the body's SHA-256 as bodySHA256. */
export function twilioJsonRequest(options: { token?: string; body?: string; path?: string } = {}): InboundRequest {
  const { token = TWILIO_TOKEN, body = '[{"id":"EZ1","type":"com.twilio.messaging.message.delivered","time":"2024-05-01T12:00:00Z"}]', path = '/in/twilio' } = options;
  const target = `${path}?bodySHA256=${getExpectedBodyHash(body)}`;
  return { ...inbound({ 'Content-Type': 'application/json', 'X-Twilio-Signature': getExpectedTwilioSignature(token, PUBLIC_URL + target, {}) }, body), target };
}

export const SQUARE_KEY = 'square-signature-key';

/** A Square notification: base64 HMAC-SHA256 of the notification URL and the body (Square's SDK only verifies). */
export function squareRequest(options: { key?: string; body?: string; path?: string } = {}): InboundRequest {
  const { key = SQUARE_KEY, body = JSON.stringify({ event_id: 'sq-evt-1', type: 'payment.updated', created_at: '2024-05-01T11:59:58Z' }), path = '/in/square' } = options;
  return { ...inbound({ 'Content-Type': 'application/json', 'x-square-hmacsha256-signature': hmac('sha256', key, 'base64', PUBLIC_URL + path + body) }, body), target: path };
}

export const PADDLE_SECRET = 'pdl_ntfset_test';

/** A Paddle Billing notification signed at `timestamp`: hex HMAC-SHA256 of `ts:body` (Paddle's SDK only verifies). */
export function paddleRequest(options: { secret?: string; body?: string; timestamp?: number } = {}): InboundRequest {
  const { secret = PADDLE_SECRET, body = JSON.stringify({ event_id: 'evt_1', event_type: 'transaction.completed', notification_id: 'ntf_1' }), timestamp = unixSeconds(NOW) } = options;
  return inbound({ 'Content-Type': 'application/json', 'Paddle-Signature': `ts=${timestamp};h1=${hmac('sha256', secret, 'hex', `${timestamp}:${body}`)}` }, body);
}

export const WOOCOMMERCE_SECRET = 'wc-secret';

/** A WooCommerce delivery: base64 HMAC-SHA256 of the body, and the X-WC-* headers WC_Webhook::deliver adds. */
export function woocommerceRequest(options: { secret?: string; body?: string } = {}): InboundRequest {
  const { secret = WOOCOMMERCE_SECRET, body = JSON.stringify({ id: 1234, date_modified_gmt: '2024-05-01T11:59:30' }) } = options;
  return inbound(
    {
      'Content-Type': 'application/json',
      'X-WC-Webhook-Signature': hmac('sha256', secret, 'base64', body),
      'X-WC-Webhook-Topic': 'order.updated',
      'X-WC-Webhook-ID': '7',
      'X-WC-Webhook-Delivery-ID': 'd41d8cd98f00b204e9800998ecf8427e',
    },
    body,
  );
}

// HubSpot signs with @hubspot/api-client's own v3 signer; GitLab, Linear and Typeform publish none that signs.

export const HUBSPOT_SECRET = 'hubspot-client-secret';
/** Not where a test server listens: HubSpot signs the public URL, whatever the gateway's own address. */
export const HUBSPOT_PUBLIC_URL = 'https://hooks.example.com';

/** A HubSpot delivery as it arrives at `target`, signed over the public origin with that path, now. */
export function hubspotRequest(options: { body: string; target?: string; now?: Date; secret?: string }): InboundRequest {
  const { body, target = '/in/hubspot', now = NOW, secret = HUBSPOT_SECRET } = options;
  const timestamp = now.getTime();
  const url = `${HUBSPOT_PUBLIC_URL}${target}`;
  const signature = Signature.getSignature('POST', 'v3', { clientSecret: secret, requestBody: body, url, timestamp, signature: '' });
  return { ...inbound({ 'Content-Type': 'application/json', 'X-HubSpot-Request-Timestamp': String(timestamp), 'X-HubSpot-Signature-v3': signature }, body, now), target };
}

export const GITLAB_TOKEN = 'gitlab-secret-token';

export function gitlabRequest(options: { body: string; token?: string }): InboundRequest {
  const { body, token = GITLAB_TOKEN } = options;
  return inbound(
    { 'Content-Type': 'application/json', 'X-Gitlab-Token': token, 'X-Gitlab-Event': 'Push Hook', 'X-Gitlab-Event-UUID': randomUUID(), 'Idempotency-Key': randomUUID() },
    body,
  );
}

export const LINEAR_SECRET = 'linear-signing-secret';

/**
 * A Linear delivery carrying `body`: Linear signs its timestamp into a JSON object, so an object body is stamped,
 * and any other text rides in one.
 */
export function linearRequest(options: { body: string; now?: Date; secret?: string }): InboundRequest {
  const { body, now = NOW, secret = LINEAR_SECRET } = options;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  const object = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? parsed : { text: body };
  const stamped = JSON.stringify({ ...object, webhookTimestamp: now.getTime() });
  return inbound(
    { 'Content-Type': 'application/json; charset=utf-8', 'Linear-Signature': hmac('sha256', secret, 'hex', stamped), 'Linear-Delivery': randomUUID(), 'Linear-Event': 'Issue' },
    stamped,
    now,
  );
}

export const TYPEFORM_SECRET = 'typeform-webhook-secret';

export function typeformRequest(options: { body: string; secret?: string }): InboundRequest {
  const { body, secret = TYPEFORM_SECRET } = options;
  return inbound({ 'Content-Type': 'application/json', 'Typeform-Signature': `sha256=${hmac('sha256', secret, 'base64', body)}` }, body);
}
