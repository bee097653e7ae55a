import type { Context } from 'hono';
import { deleteCookie, setCookie } from 'hono/cookie';
import { SESSION_COOKIE, SESSION_SECONDS } from './session.ts';

/** `proto` of the first (client-side) element of an RFC 7239 `Forwarded` header, lowercased. */
const forwardedProto = (header: string | undefined) =>
  /(?:^|;)\s*proto\s*=\s*"?([a-z][a-z0-9+.-]*)"?\s*(?:;|$)/i.exec(header?.split(',')[0] ?? '')?.[1]?.toLowerCase();

/**
 * The request came over https, directly or through a proxy that says so (`X-Forwarded-Proto` or `Forwarded`):
 * cookies then carry Secure. Believing a client that claims https costs nothing: Secure only narrows a cookie.
 */
export const overHttps = (c: Context) =>
  new URL(c.req.url).protocol === 'https:' ||
  c.req.header('x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase() === 'https' ||
  forwardedProto(c.req.header('forwarded')) === 'https';

/** Every dashboard cookie: out of reach of scripts and of other sites, and only sent to /ui. */
export const cookieOptions = (c: Context, maxAge: number) =>
  ({ httpOnly: true, sameSite: 'Strict', path: '/ui', secure: overHttps(c), maxAge }) as const;

export function setSession(c: Context, value: string): void {
  setCookie(c, SESSION_COOKIE, value, cookieOptions(c, SESSION_SECONDS));
}

export function clearSession(c: Context): void {
  deleteCookie(c, SESSION_COOKIE, cookieOptions(c, 0));
}
