import { createHash } from 'node:crypto';

/**
 * pg-boss keys a job by a UUID and inserts with ON CONFLICT DO NOTHING, so a job ID derived from the event's ID
 * makes every retry of that event the same job: `send` returns null for it. Shopify's event IDs are not UUIDs,
 * so the ID is a hash of the source and the event, laid out as a UUID (version 8, "custom").
 */
export function jobIdOf(source: string, eventId: string): string {
  const bytes = createHash('sha256').update(`${source}\n${eventId}`).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
