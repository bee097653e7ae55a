/**
 * An event ID for a sender that names none (Zoom; most of Meta's notifications): a hash of what the sender says
 * happened. The parsed JSON is hashed in a canonical form — object keys sorted, no whitespace — so a retry the
 * sender serializes afresh (another key order, other spacing) still names the same event, while two events, which
 * differ in their time or their object, differ in ID. Only content the sender keeps on a retry may be hashed: a
 * caller leaves out any field the sender stamps at sending.
 */
import { createHash } from 'node:crypto';

/** JSON with every object's keys sorted, recursively; arrays keep their order, which is part of the content. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`).join(',')}}`;
  }
  // undefined appears only where a caller built the value; JSON has no such thing, so it reads as null.
  return JSON.stringify(value) ?? 'null';
}

/** `prefix` + the first 32 hex digits (128 bits) of the canonical JSON's SHA-256. */
export function contentId(prefix: string, value: unknown): string {
  return prefix + createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, 32);
}
