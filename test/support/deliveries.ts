import { createHmac, randomUUID } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';

export const SHOP_SECRET = 'test-shop-secret';

export interface Delivery {
  headers: Record<string, string>;
  body: string;
}

/** A Shopify webhook signed as Shopify signs it (base64 HMAC-SHA256 of the raw body). */
export function shopifyDelivery(options: {
  eventId: string;
  webhookId?: string;
  topic?: string;
  body?: string;
  secret?: string;
}): Delivery {
  const body = options.body ?? JSON.stringify({ id: 450789469, email: 'jon@example.com', total_price: '10.00' });
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-shopify-hmac-sha256': createHmac('sha256', options.secret ?? SHOP_SECRET).update(body).digest('base64'),
      'x-shopify-webhook-id': options.webhookId ?? randomUUID(),
      'x-shopify-event-id': options.eventId,
      'x-shopify-topic': options.topic ?? 'orders/create',
    },
  };
}

export const GITHUB_SECRET = 'test-github-secret';

/** A GitHub webhook signed with GitHub's own library (X-Hub-Signature-256 over the raw body). */
export async function githubDelivery(options: { event: string; guid: string; body: string }): Promise<Delivery> {
  return {
    body: options.body,
    headers: {
      'content-type': 'application/json',
      'x-hub-signature-256': await sign(GITHUB_SECRET, options.body),
      'x-github-delivery': options.guid,
      'x-github-hook-id': '292430182',
      'x-github-event': options.event,
    },
  };
}

export interface Answer {
  status: number;
  headers: Headers;
  json: any;
}

export async function post(baseUrl: string, source: string, delivery: Delivery): Promise<Answer> {
  const response = await fetch(`${baseUrl}/in/${source}`, { method: 'POST', headers: delivery.headers, body: delivery.body });
  const text = await response.text();
  return { status: response.status, headers: response.headers, json: text ? JSON.parse(text) : null };
}

/** A config with one Shopify source and the given actions (defaults: one keyed action). */
export function shopConfig(actions: Record<string, object> = { crm: { url: 'http://127.0.0.1:9/crm', idempotency: 'key' } }, extra: object = {}) {
  return { sources: { shop: { adapter: 'shopify', secrets: [SHOP_SECRET], actions, ...extra } } };
}
