/**
 * What every sender adapter does: verify a request against its raw bytes, then name the three identities
 * oncehook keeps apart. An adapter never touches the database; it either returns an Identity or throws
 * SignatureError (401) or InputError (400) from src/errors.ts.
 */
export const ADAPTER_NAMES = [
  'shopify',
  'shopify-flow',
  'stripe',
  'github',
  'standard-webhooks',
  'generic-hmac',
] as const;
export type AdapterName = (typeof ADAPTER_NAMES)[number];

export interface InboundRequest {
  /** Web Headers: lookups are case-insensitive. */
  headers: Headers;
  /** The body exactly as received; signatures are checked against these bytes, never a re-serialization. */
  body: Uint8Array;
  /** When the request arrived, for timestamp tolerance windows. */
  now: Date;
}

export interface Identity {
  /** One HTTP delivery; stable across the sender's retries of that delivery (synthesized where the sender has none). */
  deliveryId: string;
  /** The thing that happened at the sender; shared by every subscription that delivers it. */
  eventId: string;
  /** What kind of event, for an action's `topics` filter; null where the scheme names none. */
  topic: string | null;
  /** When the sender says the event happened, if it says. */
  occurredAt: Date | null;
  /** The parsed JSON body, or undefined when the body is not JSON; parsed only after the signature matched. */
  json: unknown;
  /**
   * True when the sender speaks about the hook itself (GitHub's ping when a hook is created), not about something
   * that happened: recorded and deduplicated like any delivery, but no action is given a task for it.
   */
  informational?: boolean;
}

export interface Adapter {
  readonly name: AdapterName;
  /** The sender's documented timeout: the default budget for answering it. */
  readonly ackTimeoutMs: number;
  /** Header names (lowercase) that carry signatures; they are redacted before headers are stored or logged. */
  readonly signatureHeaders: readonly string[];
  verify(request: InboundRequest): Identity;
}
