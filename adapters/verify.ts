/**
 * The pieces every adapter verifies with. The order the adapters follow is the Standard Webhooks library's:
 * check the timestamp window, compare signatures over the raw bytes in constant time against every secret,
 * and only then parse the body and name the identities.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { HttpError, InputError, SignatureError } from '../src/errors.ts';
import { jsonPointer } from '../src/json-pointer.ts';
import type { InboundRequest } from './types.ts';

export { jsonPointer };

export type HmacAlgorithm = 'sha1' | 'sha256' | 'sha512';
export type DigestEncoding = 'hex' | 'base64';

/** HMAC over the parts in order, so `${t}.` + body is signed without copying or re-encoding the body. */
export function hmac(
  algorithm: HmacAlgorithm,
  key: string | Uint8Array,
  encoding: DigestEncoding,
  ...parts: (string | Uint8Array)[]
): string {
  const mac = createHmac(algorithm, key);
  for (const part of parts) mac.update(part);
  return mac.digest(encoding);
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/**
 * Constant-time string comparison. timingSafeEqual throws on unequal lengths, and a signature of the wrong
 * length is simply wrong; the length of a valid signature is public (it follows from the algorithm).
 */
export function safeEqual(provided: string, expected: string): boolean {
  const a = Buffer.from(provided, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * True when any provided signature matches the one computed with any secret: while a secret is rotated the
 * sender signs with either. Hex is compared lowercased because some senders print digests in uppercase.
 */
export function anySignatureMatches<Key>(
  secrets: readonly Key[],
  sign: (secret: Key) => string,
  provided: readonly string[],
  encoding: DigestEncoding,
): boolean {
  const candidates = encoding === 'hex' ? provided.map((s) => s.toLowerCase()) : provided;
  return secrets.some((secret) => {
    const expected = sign(secret);
    return candidates.some((candidate) => safeEqual(candidate, expected));
  });
}

/** The first of several names that is present; web Headers already ignore case. */
export function header(headers: Headers, ...names: string[]): string | null {
  for (const name of names) {
    const value = headers.get(name);
    if (value !== null) return value;
  }
  return null;
}

/** A signature header that must be present; its absence is the sender's (or an impostor's) problem: 401. */
export function requireSignatureHeader(headers: Headers, ...names: string[]): string {
  const value = header(headers, ...names);
  if (value === null || value.trim() === '') {
    throw new SignatureError(`missing ${names[0]} header`, 'missing_header');
  }
  return value.trim();
}

/**
 * Checks a unix-seconds timestamp header against the arrival time, in both directions: a replayed old request
 * and one stamped far in the future (a skewed or forged clock) are both refused. The window ahead defaults to the
 * one behind; a sender whose retries keep their first timestamp (Zoom) needs a long one behind, and only clock
 * skew ahead.
 */
export function checkTimestamp(
  value: string,
  now: Date,
  toleranceSeconds: number,
  headerName: string,
  futureToleranceSeconds = toleranceSeconds,
): number {
  if (!/^\d{1,15}$/.test(value)) {
    throw new SignatureError(`${headerName} must be a unix timestamp in seconds`, 'timestamp');
  }
  const timestamp = Number(value);
  const age = Math.floor(now.getTime() / 1000) - timestamp;
  const allowed = `more than the ${toleranceSeconds} s allowed`;
  if (age > toleranceSeconds) {
    throw new SignatureError(`${headerName} is ${age} s old, ${allowed}; a replay, or the sender's clock is wrong`, 'timestamp');
  }
  if (-age > futureToleranceSeconds) {
    const unit = inMilliseconds(timestamp, now);
    const ahead = `more than the ${futureToleranceSeconds} s allowed`;
    throw new SignatureError(`${headerName} ${unit ?? `is ${-age} s in the future, ${ahead}; check the sender's clock`}`, 'timestamp');
  }
  return timestamp;
}

/** How far from now a timestamp read in milliseconds may lie and still be taken for one: a sender's clock is off by less. */
const PLAUSIBLE_MS_SKEW_SECONDS = 86_400;

/**
 * A sender that stamps milliseconds where seconds are expected reads as ~50,000 years ahead, and "check the clock"
 * sends its developer looking at the wrong thing: the clock is right, the unit is not.
 */
function inMilliseconds(timestamp: number, now: Date): string | null {
  const seconds = Math.floor(timestamp / 1000);
  if (Math.abs(seconds - now.getTime() / 1000) > PLAUSIBLE_MS_SKEW_SECONDS) return null;
  return `is ${timestamp}, which is milliseconds (${new Date(timestamp).toISOString()}): it must be unix seconds, e.g. ${seconds}`;
}

/**
 * Checks a unix-milliseconds timestamp (HubSpot's header, Linear's body field) against the arrival time, in both
 * directions, as checkTimestamp does for seconds.
 */
export function checkMillisecondsTimestamp(milliseconds: number, now: Date, toleranceSeconds: number, what: string): void {
  const ageMs = now.getTime() - milliseconds;
  if (Math.abs(ageMs) <= toleranceSeconds * 1000) return;
  // Rounded up, so a timestamp 300.4 s off is not said to be "300 s old, more than the 300 s allowed".
  const off = Math.ceil(Math.abs(ageMs) / 1000);
  // Unix seconds read as milliseconds lie in January 1970: "a replay" would send its developer the wrong way.
  if (Math.abs(milliseconds * 1000 - now.getTime()) <= PLAUSIBLE_MS_SKEW_SECONDS * 1000) {
    throw new SignatureError(`${what} is ${milliseconds}, which is unix seconds: it must be milliseconds, e.g. ${now.getTime()}`, 'timestamp');
  }
  const allowed = `more than the ${toleranceSeconds} s allowed`;
  throw new SignatureError(
    ageMs > 0
      ? `${what} is ${off} s old, ${allowed}; a replay, or the sender's clock is wrong`
      : `${what} is ${off} s in the future, ${allowed}; check the sender's clock`,
    'timestamp',
  );
}

/**
 * A shared token (GitLab's X-Gitlab-Token) against every configured secret, in constant time. Unlike a digest, a
 * token's length is part of the secret; comparing SHA-256 digests keeps timingSafeEqual from telling it.
 */
export function tokenMatches(provided: string, secrets: readonly string[]): boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  const candidate = digest(provided);
  return secrets.map((secret) => timingSafeEqual(candidate, digest(secret))).includes(true);
}

// fatal: a body that is not valid UTF-8 is malformed, not silently patched with U+FFFD.
const utf8 = new TextDecoder('utf-8', { fatal: true });

export function decodeUtf8(body: Uint8Array): string {
  try {
    return utf8.decode(body);
  } catch {
    throw new InputError('malformed_body', 'the body is not valid UTF-8');
  }
}

/** Parses a verified body; call only after the signature matched. */
export function parseJson(body: Uint8Array): unknown {
  return parseJsonText(decodeUtf8(body));
}

/**
 * Deeper than any sender's payload, shallow enough that nothing downstream of the parse (a log serializer, a
 * pointer walk, a person's viewer) can be driven into a stack overflow by a hostile but validly signed body.
 */
export const MAX_JSON_DEPTH = 64;

/** The deepest nesting of arrays and objects, counted over the text without parsing it. */
function jsonDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) deepest = Math.max(deepest, ++depth);
    else if (c === 0x7d || c === 0x5d) depth--;
  }
  return deepest;
}

export function parseJsonText(text: string): unknown {
  if (jsonDepth(text) > MAX_JSON_DEPTH) {
    throw new InputError('malformed_body', `the body nests JSON deeper than ${MAX_JSON_DEPTH} levels`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InputError('malformed_body', `the body is not valid JSON: ${(error as Error).message}`);
  }
}

/**
 * The JSON body where the sender may also send something else (Shopify can send XML): a body declared as
 * another content type is kept as bytes with json undefined; anything declared as JSON, or undeclared, must parse.
 */
export function parseJsonUnlessDeclaredOther(headers: Headers, body: Uint8Array): unknown {
  const contentType = headers.get('content-type');
  if (contentType !== null && !/[/+]json\b/i.test(contentType)) return undefined;
  return parseJson(body);
}

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

/**
 * A batch's list of events, refused whole with 413 when it holds more than the source takes: counted before any
 * event is named, so an oversized batch costs its parse and no more.
 */
export function withinBatchLimit<T>(events: T[], request: InboundRequest): T[] {
  const max = request.maxItems;
  if (max !== undefined && events.length > max) {
    throw new HttpError(413, 'too_many_items', `the delivery carries ${events.length} events; this source takes at most ${max} in one (maxBatchItems)`);
  }
  return events;
}

/** A JSON value's type as a message names it: "a number", "an object", "null". */
export function jsonKind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
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
