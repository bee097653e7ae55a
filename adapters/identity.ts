/**
 * The values oncehook names a delivery by, read from a verified request: IDs it can store and deduplicate on,
 * a topic, and when the event happened.
 */
import { InputError } from '../src/errors.ts';
import { jsonPointer } from '../src/json-pointer.ts';
import { jsonKind, parseJson } from './body.ts';
import type { Identity } from './types.ts';

const MAX_ID_LENGTH = 255;

/** An identity oncehook deduplicates on: present, not blank, and short enough to be a key. */
export function requireId(value: string | null | undefined, what: string): string {
  const id = value?.trim();
  if (id === undefined || id === '') {
    throw new InputError('missing_identity', `the request verified but has no ${what}`);
  }
  if (id.length > MAX_ID_LENGTH) {
    throw new InputError(
      'invalid_identity',
      `the ${what} is ${id.length} characters long; at most ${MAX_ID_LENGTH} are accepted`,
    );
  }
  const unstorable = whyUnstorable(id);
  if (unstorable) throw new InputError('invalid_identity', `the ${what} contains ${unstorable}`);
  return id;
}

/**
 * Why PostgreSQL would refuse this text, or null: its text cannot hold NUL, and its JSON input refuses a lone
 * UTF-16 surrogate (`\ud800` in a JSON body parses to one). Either fails the write every time, and a 503
 * would have the sender retry a delivery that can never be recorded.
 */
function whyUnstorable(text: string): string | null {
  if (text.includes('\u0000')) return 'a NUL character';
  if (/\p{Surrogate}/u.test(text)) return 'a lone UTF-16 surrogate, which is not Unicode text';
  return null;
}

/**
 * An identity read from a verified body, where the sender documents a string (Stripe's "evt_…"): a number there
 * is not that ID.
 */
export function stringId(value: unknown, what: string): string {
  return textId(value, what, 'a string');
}

/**
 * An identity where oncehook does not know the sender (generic-hmac): a string, or a JSON integer as its decimal
 * text. Many senders number their events, and the number names the event as exactly as its text would; refused,
 * such a sender could not be connected at all without changing what it sends.
 */
export function stringOrIntegerId(value: unknown, what: string): string {
  if (typeof value !== 'number') return textId(value, what, 'a string or an integer');
  // Past 2^53, or with a fraction, two different IDs can parse to the same number and would be deduplicated as one.
  if (!Number.isSafeInteger(value)) {
    throw new InputError('invalid_identity', `the ${what} is a number JSON cannot carry exactly; send it as a string`);
  }
  return String(value);
}

/**
 * Only an absent field is a missing ID. One of another type is said as what it is: "has no event id" sent the
 * sender's developer looking for a field that is there.
 */
function textId(value: unknown, what: string, expected: string): string {
  if (value !== undefined && typeof value !== 'string') {
    throw new InputError('invalid_identity', `the ${what} is ${jsonKind(value)}, not ${expected}`);
  }
  return requireId(value, what);
}

/** Where a sender's JSON body names its event: JSON pointers to the event's ID (a string), its topic and its time. */
export interface EventInBody {
  eventId: string;
  topic: string;
  occurredAt: string;
  /** How the time is written; an ISO 8601 string unless said. */
  date?: (value: unknown) => Date | null;
}

/**
 * The identity of a verified delivery whose JSON body names its event. The delivery is the event, unless the
 * sender names it apart: `deliveryOf` reads it, given the body and the event's ID.
 */
export function eventInBody(body: Uint8Array, at: EventInBody, deliveryOf = (_json: unknown, eventId: string) => eventId): Identity {
  const json = parseJson(body);
  const eventId = stringId(jsonPointer(json, at.eventId), `event id (body "${at.eventId.slice(1).replaceAll('/', '.')}")`);
  return {
    deliveryId: deliveryOf(json, eventId),
    eventId,
    topic: optionalString(jsonPointer(json, at.topic)),
    occurredAt: (at.date ?? isoDate)(jsonPointer(json, at.occurredAt)),
    json,
  };
}

/** A string, or null when absent or blank; for topics, which filter actions but are never required. */
export function optionalString(value: unknown): string | null {
  // An unstorable topic (see whyUnstorable) is treated as none.
  return typeof value === 'string' && value.trim() !== '' && whyUnstorable(value) === null ? value.trim() : null;
}

/**
 * When the event happened is informational, so an unreadable value becomes null rather than a 400:
 * refusing a verified delivery over it would only make the sender retry it until it gives up.
 */
export function isoDate(value: unknown): Date | null {
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}T/.test(value)) return null;
  return storableDate(new Date(value));
}

export function unixSecondsDate(value: unknown): Date | null {
  const seconds = typeof value === 'string' && /^\d{1,15}$/.test(value) ? Number(value) : value;
  if (typeof seconds !== 'number' || !Number.isSafeInteger(seconds) || seconds < 0) return null;
  return storableDate(new Date(seconds * 1000));
}

/** Unix milliseconds (Zoom's event_ts, Messenger's timestamps); null when unreadable, as for seconds. */
export function unixMillisecondsDate(value: unknown): Date | null {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) return null;
  return storableDate(new Date(value));
}

/**
 * Years 1 to 9999 only: PostgreSQL has no year 0 (JavaScript's "0000-…" is 1 BC), and past 9999 the ISO text
 * becomes "+010000-…", which it cannot read. Either would fail the write on every retry.
 */
function storableDate(date: Date): Date | null {
  const year = date.getUTCFullYear();
  return Number.isNaN(year) || year < 1 || year > 9999 ? null : date;
}
