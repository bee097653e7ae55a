/**
 * The pieces every sender module signs and verifies with. The order the adapters follow is the Standard Webhooks
 * library's: check the timestamp window, compare signatures over the raw bytes in constant time against every
 * secret, and only then parse the body (body.ts) and name the identities (identity.ts).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { SignatureError } from '../src/errors.ts';

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
