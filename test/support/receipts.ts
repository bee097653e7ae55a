import { receiptId, sha256Hex, taskId } from '../../src/ids.ts';
import type { ReceiptInput } from '../../src/store/atomic/record.ts';

/** A verified Shopify receipt as ingest hands it to the store: one `crm` task named by `taskKey`. */
export function shopReceipt(deliveryId: string, eventId: string, taskKey = eventId): ReceiptInput {
  const body = new TextEncoder().encode(JSON.stringify({ eventId }));
  return {
    id: receiptId(),
    source: 'shop',
    deliveryId,
    eventId,
    topic: 'orders/create',
    occurredAt: null,
    headers: {},
    contentType: 'application/json',
    body,
    bodySha256: sha256Hex(body),
    tasks: [{ id: taskId('shop', taskKey, 'crm'), action: 'crm', state: 'pending', afterTaskId: null }],
    skipped: [],
  };
}
