import type { Context, MiddlewareHandler } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { AdminTokens } from '../api/tokens.ts';
import type { UiEnv } from './env.ts';
import { csrfMatches, csrfToken, SESSION_COOKIE, SESSION_SECONDS, verifySession } from './session.ts';

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

/** `/ui/...` paths only: a `next` or `back` from a form must not send the browser elsewhere. */
export const localPath = (path: unknown, fallback: string): string =>
  typeof path === 'string' && /^\/ui(\/[^\\]*)?$/.test(path) && !path.startsWith('/ui//') ? path : fallback;

/**
 * Signed in, or sent to the login page; and on every POST, the session's CSRF token in the `_csrf` field,
 * or 403. Reading the form here leaves it cached for the handler (Hono caches parseBody).
 */
export function requireSession(tokens: AdminTokens): MiddlewareHandler<UiEnv> {
  return async (c, next) => {
    const value = getCookie(c, SESSION_COOKIE);
    const label = verifySession(tokens, value);
    if (label === null || value === undefined) {
      if (value !== undefined) clearSession(c);
      const next = c.req.method === 'GET' ? `?next=${encodeURIComponent(new URL(c.req.url).pathname + new URL(c.req.url).search)}` : '';
      return c.redirect(`/ui/login${next}`, 303);
    }
    const csrf = csrfToken(tokens, label, value);
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
      if (!csrfMatches(csrf, form._csrf)) {
        return c.html(
          '<!DOCTYPE html><title>Refused</title><p>This form is out of date or did not come from the dashboard (CSRF token missing or wrong). Go back, reload the page and try again.</p>',
          403,
        );
      }
    }
    c.set('actor', label);
    c.set('csrf', csrf);
    await next();
  };
}
