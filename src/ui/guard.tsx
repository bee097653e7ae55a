import type { MiddlewareHandler } from 'hono';
import { getCookie } from 'hono/cookie';
import type { AdminTokens } from '../api/tokens.ts';
import { clearSession } from './cookies.ts';
import type { UiEnv } from './env.ts';
import { Problem } from './layout.tsx';
import { csrfMatches, csrfToken, SESSION_COOKIE, verifySession } from './session.ts';

/**
 * `/ui/...` paths only: a `next` or `back` from a form must not send the browser elsewhere. Printable ASCII
 * only (a path we link to is percent-encoded): a line break cannot go into the Location header, and a
 * backslash is read as a slash by browsers.
 */
export const localPath = (path: unknown, fallback: string): string =>
  typeof path === 'string' && /^\/ui(\/[!-[\]-~]*)?$/.test(path) && !path.startsWith('/ui//') ? path : fallback;

/** Signed in, or sent to the login page. Sets the actor and the session's CSRF token; reads no body. */
export function requireSession(tokens: AdminTokens): MiddlewareHandler<UiEnv> {
  return async (c, next) => {
    const value = getCookie(c, SESSION_COOKIE);
    const label = verifySession(tokens, value);
    if (label === null || value === undefined) {
      if (value !== undefined) clearSession(c);
      const url = new URL(c.req.url);
      const back = c.req.method === 'GET' ? `?next=${encodeURIComponent(url.pathname + url.search)}` : '';
      return c.redirect(`/ui/login${back}`, 303);
    }
    c.set('actor', label);
    c.set('csrf', csrfToken(tokens, label, value));
    await next();
  };
}

/**
 * On every POST, the session's CSRF token in the `_csrf` field, or 403. After requireSession and the body
 * limit: reading the form here leaves it cached for the handler (Hono caches parseBody).
 */
export const requireCsrf: MiddlewareHandler<UiEnv> = async (c, next) => {
  if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
    const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
    if (!csrfMatches(c.get('csrf'), form._csrf)) {
      const why = 'This form did not come from your dashboard session (its CSRF token is missing or stale). Go back, reload the page and try again.';
      return c.html(<Problem status={403} message={why} />, 403);
    }
  }
  await next();
};
