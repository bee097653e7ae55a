/**
 * What every sender's adapter does: verify a request against its raw bytes, then name the three identities
 * oncehook keeps apart. An adapter never touches the database; it either returns an Identity or throws
 * SignatureError (401) or InputError (400) from src/errors.ts.
 */

export interface InboundRequest {
  /** Web Headers: lookups are case-insensitive. */
  headers: Headers;
  /** The body exactly as received; signatures are checked against these bytes, never a re-serialization. */
  body: Uint8Array;
  /** When the request arrived, for timestamp tolerance windows. */
  now: Date;
  /**
   * The path and query the sender called (`/in/sms?x=1`). A sender that signs the URL it called (Twilio, Square)
   * is verified against the source's `publicUrl` origin with this path.
   */
  target?: string;
  /**
   * The most events a batch may carry (the source's `maxBatchItems`): a sender that batches refuses more with 413
   * `too_many_items` as soon as it has counted them, before it names any. Absent: no limit.
   */
  maxItems?: number;
}

/** What a sender expects back from a handshake, in its own format. */
export interface HandshakeAnswer {
  status: number;
  contentType: string;
  body: string;
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
  /**
   * The sender is checking the endpoint, not telling of an event (Slack's url_verification, Twitch's
   * webhook_callback_verification, Zoom's endpoint.url_validation): the delivery is recorded as a `handshake`,
   * makes no task, and is answered with this.
   */
  handshake?: HandshakeAnswer;
  /**
   * The handshake carries no signature (WooCommerce's ping): anyone can send it, so it is answered and counted but
   * never recorded.
   */
  unsigned?: boolean;
  /**
   * The events of a delivery that carries several (SendGrid's array, Meta's entry[]): each is recorded and
   * deduplicated on its own, in one transaction, and the answer lists each one's decision.
   */
  items?: EventItem[];
}

/** One event of a batch: its own identities, and its own bytes, which its tasks send. */
export interface EventItem extends Omit<Identity, 'items' | 'handshake'> {
  body: Uint8Array;
}

export interface Adapter {
  /** The sender's name, as a source's `adapter` gives it. */
  readonly name: string;
  /** The sender's documented timeout: the default budget for answering it. */
  readonly ackTimeoutMs: number;
  /** Header names (lowercase) that carry signatures; they are redacted before headers are stored or logged. */
  readonly signatureHeaders: readonly string[];
  verify(request: InboundRequest): Identity;
  /**
   * A handshake a sender makes by GET (Meta's `hub.mode=subscribe` with `hub.verify_token`): its answer, or an
   * HttpError (403 when the token is not the source's). Adapters without one answer GET 405.
   */
  answerGet?(query: URLSearchParams): { identity: Pick<Identity, 'deliveryId' | 'eventId' | 'topic'>; answer: HandshakeAnswer };
}
