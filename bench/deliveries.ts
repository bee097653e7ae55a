import { createHmac, randomUUID } from 'node:crypto';

/** The bench's own secret: nothing it signs is accepted by a gateway configured for real senders. */
export const BENCH_SECRET = 'oncehook-bench-secret';
export const SOURCE = 'shop';
export const TOPIC = 'orders/create';

/** One signed Shopify delivery, as undici sends it: flat header pairs and the exact bytes that were signed. */
export interface SignedDelivery {
  headers: string[];
  body: Buffer;
}

/** How many customers the orders are spread over: the keys of the `forward-ordered` phase's ordered action. */
export const CUSTOMERS = 1000;

/** A customer of the event, the same for every run: FNV-1a of its ID, over CUSTOMERS. */
function customerOf(eventId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < eventId.length; i++) hash = Math.imul(hash ^ eventId.charCodeAt(i), 0x01000193) >>> 0;
  return hash % CUSTOMERS;
}

/**
 * An order of about `bytes` bytes (at least ~300). The order number is the event's, so bodies differ the way real
 * ones do and each signature is computed over its own bytes; its customer is one of CUSTOMERS.
 */
export function orderBody(eventId: string, bytes = 500, marker?: string): string {
  const order = {
    id: eventId,
    ...(marker ? { probe: marker } : {}),
    customer: { id: customerOf(eventId) },
    email: 'jon@example.com',
    created_at: '2026-01-01T12:00:00-05:00',
    currency: 'USD',
    total_price: '199.65',
    financial_status: 'paid',
    line_items: [{ id: 866550311766439000, sku: 'IPOD-342-N', quantity: 1, price: '199.00' }],
    note: '',
  };
  const bare = JSON.stringify(order);
  order.note = 'x'.repeat(Math.max(0, bytes - bare.length));
  return JSON.stringify(order);
}

/** Signed as Shopify signs: base64 HMAC-SHA256 of the raw body; the webhook ID names this delivery. */
export function signedDelivery(
  options: { eventId: string; webhookId?: string; bytes?: number; marker?: string; secret?: string },
): SignedDelivery {
  const body = Buffer.from(orderBody(options.eventId, options.bytes, options.marker));
  const signature = createHmac('sha256', options.secret ?? BENCH_SECRET).update(body).digest('base64');
  return {
    body,
    headers: [
      'content-type', 'application/json',
      'x-shopify-hmac-sha256', signature,
      'x-shopify-webhook-id', options.webhookId ?? randomUUID(),
      'x-shopify-event-id', options.eventId,
      'x-shopify-topic', TOPIC,
      'x-shopify-shop-domain', 'bench.myshopify.com',
      'x-shopify-triggered-at', '2026-01-01T17:00:00.000Z',
    ],
  };
}

/**
 * Deliveries with unique identities: `run` keeps two runs on one database apart, the counter keeps each
 * delivery of a run apart.
 */
export class DeliveryMaker {
  #next = 0;
  constructor(
    private readonly run: string,
    private readonly bytes: number,
  ) {}

  make(): SignedDelivery {
    const n = this.#next++;
    return signedDelivery({ eventId: `${this.run}-${n}`, webhookId: `${this.run}-w${n}`, bytes: this.bytes });
  }
}
