import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AdminTokens } from '../http/tokens.ts';

/**
 * Dashboard sessions, stateless: the cookie holds `label.expiry.signature`, never the token. The signature is
 * an HMAC keyed by a slow derivation of the label's token (AdminTokens.secretOf), so
 * - every web instance that knows the token can check a session without shared storage, and
 * - removing or rotating a token invalidates every session made with it at once.
 * The CSRF token of a session is a second HMAC over the cookie value under a different purpose, so it needs no
 * storage either and differs per session.
 */

export const SESSION_COOKIE = 'oncehook_session';
export const SESSION_SECONDS = 12 * 60 * 60;

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64url');
const unb64 = (text: string) => Buffer.from(text, 'base64url').toString('utf8');

/** One key per purpose, derived from the token's key: a session signature can never pass as a CSRF token. */
const mac = (secret: Buffer, purpose: 'session' | 'csrf', message: string) =>
  createHmac('sha256', secret).update(`oncehook-ui:${purpose}\n${message}`).digest();

/** Equal-length buffers compared in constant time; different lengths say nothing secret (a MAC's length is public). */
export function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A cookie value for `label`, valid until `now + SESSION_SECONDS`. Null for a label with no token. */
export function signSession(tokens: AdminTokens, label: string, now = Date.now()): string | null {
  const secret = tokens.secretOf(label);
  if (!secret) return null;
  const payload = `${b64(label)}.${Math.floor(now / 1000) + SESSION_SECONDS}`;
  return `${payload}.${mac(secret, 'session', payload).toString('base64url')}`;
}

const SESSION_SHAPE = /^([A-Za-z0-9_-]{1,200})\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/;

/**
 * A cookie value shaped like a session and not yet expired: one whose signature is then checked, which answers
 * whether a guessed token was right — so checking it is a sign-in, and the throttle counts it.
 */
export function sessionToCheck(value: string | undefined, now = Date.now()): boolean {
  const match = SESSION_SHAPE.exec(value ?? '');
  return match !== null && Number(match[2]) * 1000 > now;
}

/** The label a cookie value was signed for, or null: malformed, expired, tampered, or its token is gone. */
export function verifySession(tokens: AdminTokens, value: string | undefined, now = Date.now()): string | null {
  const match = SESSION_SHAPE.exec(value ?? '');
  if (!match) return null;
  const [, label64, expiry, signature] = match as unknown as [string, string, string, string];
  if (Number(expiry) * 1000 <= now) return null;
  const label = unb64(label64);
  const secret = tokens.secretOf(label);
  if (!secret) return null;
  return sameBytes(Buffer.from(signature, 'base64url'), mac(secret, 'session', `${label64}.${expiry}`)) ? label : null;
}

/** The CSRF token of a (verified) session: forms carry it in a hidden field. */
export function csrfToken(tokens: AdminTokens, label: string, sessionValue: string): string {
  const secret = tokens.secretOf(label);
  if (!secret) throw new Error('csrfToken: the session was not verified');
  return mac(secret, 'csrf', sessionValue).toString('base64url');
}

export function csrfMatches(expected: string, presented: unknown): boolean {
  return typeof presented === 'string' && sameBytes(Buffer.from(presented, 'utf8'), Buffer.from(expected, 'utf8'));
}

/**
 * The login form has no session yet: a random nonce in a SameSite=Strict cookie, repeated in the form (double
 * submit), so a cross-site form cannot sign a browser in. It is not signed: no key exists before sign-in that a
 * stranger may not learn from — one derived from the tokens let a single anonymous page load test guesses of
 * the token offline — and a per-process key would refuse a form served by another web instance.
 */
export const LOGIN_COOKIE = 'oncehook_login';
export const LOGIN_SECONDS = 30 * 60;

export const loginNonce = (): string => randomBytes(18).toString('base64url');

export const loginNonceValid = (value: string | undefined): boolean => /^[A-Za-z0-9_-]{24}$/.test(value ?? '');
