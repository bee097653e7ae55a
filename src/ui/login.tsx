import { Hono, type Context } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import type { AdminTokens } from '../api/tokens.ts';
import { clearSession, cookieOptions, setSession } from './cookies.ts';
import { localPath } from './guard.tsx';
import { Shell } from './layout.tsx';
import { csrfMatches, LOGIN_COOKIE, loginNonce, signSession } from './session.ts';

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

/** A fresh form: the nonce goes into a cookie and into the form; a POST must bring both, equal. */
function loginForm(c: Context, next: string, error?: string, status: 200 | 401 | 403 = 200) {
  const nonce = loginNonce();
  setCookie(c, LOGIN_COOKIE, nonce, cookieOptions(c, 30 * 60));
  return c.html(<LoginPage nonce={nonce} next={next} error={error} />, status);
}

/** `/ui/login` and `/ui/logout`. */
export function loginRoutes(tokens: AdminTokens): Hono {
  const app = new Hono();

  app.get('/login', (c) => loginForm(c, localPath(c.req.query('next'), '/ui/attention')));

  app.post('/login', async (c) => {
    const form = await c.req.parseBody();
    const next = localPath(form.next, '/ui/attention');
    // Login CSRF: a cross-site form cannot read or send our SameSite=Strict nonce cookie.
    const nonce = getCookie(c, LOGIN_COOKIE);
    if (nonce === undefined || !csrfMatches(nonce, form._login)) {
      return loginForm(c, next, 'The sign-in form expired. Please try again.', 403);
    }
    const label = typeof form.token === 'string' ? tokens.labelOf(form.token.trim()) : null;
    const session = label === null ? null : signSession(tokens, label);
    if (session === null) return loginForm(c, next, 'That token is not an admin token of this oncehook.', 401);
    setSession(c, session);
    return c.redirect(next, 303);
  });

  return app;
}

/** Logging out forgets the cookie; the signed value stays valid until it expires or its token is revoked. */
export function logout(c: Context): Response {
  clearSession(c);
  return c.redirect('/ui/login', 303);
}
