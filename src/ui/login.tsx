import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { clientAddress, type SignInThrottle } from '../http/sign-in-throttle.ts';
import type { AdminTokens } from '../http/tokens.ts';
import { clearSession, cookieOptions, setSession } from './cookies.ts';
import { formLimit } from './form-limit.tsx';
import { localPath } from './guard.tsx';
import { Shell } from './layout.tsx';
import { csrfMatches, LOGIN_COOKIE, LOGIN_SECONDS, loginNonce, loginNonceValid, signSession } from './session.ts';

function LoginPage({ nonce, next, error }: { nonce: string; next: string; error?: string }) {
  return (
    <Shell title="Sign in" flash={error ? { kind: 'error', text: error } : null}>
      <div class="login">
        <div class="panel">
          <h1>
            once<span>hook</span>
          </h1>
          <p class="lede">Sign in with an admin token. Your decisions are recorded under its label.</p>
          <form method="post" action="/ui/login">
            <input type="hidden" name="_login" value={nonce} />
            <input type="hidden" name="next" value={next} />
            <label for="token">Admin token</label>
            <input id="token" name="token" type="password" autocomplete="current-password" required autofocus />
            <button class="primary" type="submit">
              Sign in
            </button>
          </form>
        </div>
      </div>
    </Shell>
  );
}

type LoginStatus = 200 | 401 | 403 | 429;

/** A fresh form: the nonce goes into a cookie and into the form; a POST must bring both, equal. */
function loginForm(c: Context, tokens: AdminTokens, next: string, error?: string, status: LoginStatus = 200) {
  const nonce = loginNonce();
  setCookie(c, LOGIN_COOKIE, nonce, cookieOptions(c, LOGIN_SECONDS));
  return c.html(<LoginPage nonce={nonce} next={next} error={error} />, status);
}

const EXPIRED = 'The sign-in form expired. Please try again.';

/** `/ui/login`. */
export function loginRoutes(tokens: AdminTokens, throttle: SignInThrottle): Hono {
  const app = new Hono();

  app.get('/login', (c) => loginForm(c, tokens, localPath(c.req.query('next'), '/ui/home')));

  // Login CSRF: a cross-site form cannot read or send our SameSite=Strict nonce cookie. Checked before the body
  // is read: a client without one gets nothing read at all.
  const nonceFirst: MiddlewareHandler = async (c, next) =>
    loginNonceValid(getCookie(c, LOGIN_COOKIE)) ? next() : loginForm(c, tokens, '/ui/home', EXPIRED, 403);

  app.post('/login', nonceFirst, formLimit, async (c) => {
    const form = await c.req.parseBody();
    const next = localPath(form.next, '/ui/home');
    if (!csrfMatches(getCookie(c, LOGIN_COOKIE)!, form._login)) return loginForm(c, tokens, next, EXPIRED, 403);
    const presented = typeof form.token === 'string' ? form.token.trim() : '';
    const judged = throttle.judge(clientAddress(c), c.req.path, () => tokens.labelOf(presented));
    if ('retryAfterSeconds' in judged) {
      c.header('retry-after', String(judged.retryAfterSeconds));
      const text = `Too many wrong tokens from your address. Try again in ${judged.retryAfterSeconds} s.`;
      return loginForm(c, tokens, next, text, 429);
    }
    const session = 'label' in judged ? signSession(tokens, judged.label) : null;
    if (session === null) return loginForm(c, tokens, next, 'That token is not an admin token of this oncehook.', 401);
    setSession(c, session);
    return c.redirect(next, 303);
  });

  return app;
}

/**
 * Logging out forgets the cookie in this browser, and no more: sessions are not stored, so a copy of the signed
 * value stays valid until it expires or its token is rotated or removed (the README says so).
 */
export function logout(c: Context): Response {
  clearSession(c);
  return c.redirect('/ui/login', 303);
}
