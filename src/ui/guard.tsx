import type { MiddlewareHandler } from 'hono';
import { getCookie } from 'hono/cookie';
import { READING } from '../http/auth.ts';
import { clientAddress, type SignInThrottle } from '../http/sign-in-throttle.ts';
import type { AdminTokens } from '../http/tokens.ts';
import { clearSession } from './cookies.ts';
import type { UiEnv } from './env.ts';
import { Problem } from './layout.tsx';
import { csrfMatches, csrfToken, SESSION_COOKIE, sessionToCheck, verifySession } from './session.ts';

/**
 * `/ui/...` paths only: a `next` or `back` from a form must not send the browser elsewhere. Printable ASCII
 * only (a path we link to is percent-encoded): a line break cannot go into the Location header, and a
 * backslash is read as a slash by browsers.
 */
export const localPath = (path: unknown, fallback: string): string =>
  typeof path === 'string' && /^\/ui(\/[!-[\]-~]*)?$/.test(path) && !path.startsWith('/ui//') ? path : fallback;

/**
 * Signed in, or sent to the login page. Sets the actor and the session's CSRF token; reads no body. A cookie
 * whose signature is checked is judged by the sign-in throttle like a presented token: a forged session is a
 * guess of the token it would be signed with.
 */
export function requireSession(tokens: AdminTokens, throttle: SignInThrottle): MiddlewareHandler<UiEnv> {
  return async (c, next) => {
    const value = getCookie(c, SESSION_COOKIE);
    if (value !== undefined && sessionToCheck(value)) {
      const judged = throttle.judge(clientAddress(c), c.req.path, () => verifySession(tokens, value));
      if ('retryAfterSeconds' in judged) {
        c.header('retry-after', String(judged.retryAfterSeconds));
        const why = `Too many wrong tokens or sessions from your address. Try again in ${judged.retryAfterSeconds} s.`;
        return c.html(<Problem status={429} message={why} />, 429);
      }
      if ('label' in judged) {
        c.set('actor', judged.label);
        c.set('csrf', csrfToken(tokens, judged.label, value));
        c.set('readOnly', tokens.readOnly(judged.label));
        return next();
      }
    }
    if (value !== undefined) clearSession(c);
    const url = new URL(c.req.url);
    const back = c.req.method === 'GET' ? `?next=${encodeURIComponent(url.pathname + url.search)}` : '';
    return c.redirect(`/ui/login${back}`, 303);
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

/**
 * A session of a read-only token posts nothing but its logout: the pages show it no form that decides, and a form
 * sent all the same is refused, as the API refuses it (`403 read_only_token`). After the CSRF check, whose form
 * it reads: a signed-in person's form is small, and one refused unread had its connection reset on a busy server
 * (node-server drains an unread body for 500 ms, then closes) — the person saw an error, not why.
 */
export const refuseReadOnly: MiddlewareHandler<UiEnv> = async (c, next) => {
  if (c.get('readOnly') && !READING.has(c.req.method) && c.req.path !== '/ui/logout') {
    const why = `You signed in with "${c.get('actor')}", a read-only token: it can look at everything and decide nothing. Sign in with a token that can decide.`;
    return c.html(<Problem status={403} message={why} />, 403);
  }
  await next();
};
