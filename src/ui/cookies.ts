import type { Context } from 'hono';
import { deleteCookie, setCookie } from 'hono/cookie';
import { SESSION_COOKIE, SESSION_SECONDS } from './session.ts';

/** The request came over https, directly or through a proxy that says so: cookies then carry Secure. */
export const overHttps = (c: Context) =>
  new URL(c.req.url).protocol === 'https:' || c.req.header('x-forwarded-proto')?.split(',')[0]?.trim() === 'https';

/** Every dashboard cookie: out of reach of scripts and of other sites, and only sent to /ui. */
export const cookieOptions = (c: Context, maxAge: number) =>
  ({ httpOnly: true, sameSite: 'Strict', path: '/ui', secure: overHttps(c), maxAge }) as const;

export function setSession(c: Context, value: string): void {
  setCookie(c, SESSION_COOKIE, value, cookieOptions(c, SESSION_SECONDS));
}

export function clearSession(c: Context): void {
  deleteCookie(c, SESSION_COOKIE, cookieOptions(c, 0));
}
