import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { SignInThrottle } from '../../src/http/sign-in-throttle.ts';
import { AdminTokens } from '../../src/http/tokens.ts';
import { uiRoutes } from '../../src/ui/routes.tsx';
import { csrfToken, SESSION_COOKIE, signSession } from '../../src/ui/session.ts';
import { capture } from '../support/log-lines.ts';
import { streaming, watchedBody } from '../support/watched-body.ts';

const RIGHT = 'alice-secret-token-0123456789';
const tokens = new AdminTokens({ alice: RIGHT, bob: 'bob-secret-token-0123456789' });

function dashboard() {
  const { logger, lines } = capture('warn');
  const deps = {
    store: {} as never,
    config: { sources: {}, limits: { writeStallMs: 30_000 } } as never,
    logger,
    stats: {} as never,
    tasks: {} as never,
    tokens,
    throttle: new SignInThrottle(logger),
    transforms: {} as never,
  };
  const app = new Hono().route('/ui', uiRoutes(deps));
  /** A sign-in form as the browser gets it: its nonce, in the cookie and the form. */
  const form = async () => {
    const answer = await app.request('/ui/login');
    return /oncehook_login=([\w.-]+)/.exec(answer.headers.get('set-cookie') ?? '')![1]!;
  };
  const login = (fields: Record<string, string>, nonce: string | null) =>
    app.request('/ui/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(nonce === null ? {} : { cookie: `oncehook_login=${nonce}` }) },
      body: new URLSearchParams(fields).toString(),
    });
  return { app, form, login, lines };
}

describe('the sign-in form', () => {
  it('takes a form only with the nonce of its cookie, so a cross-site form cannot sign a browser in', async () => {
    const { form, login } = dashboard();
    const issued = await form();
    const other = await form();
    for (const [field, cookie] of [[issued, null], [issued, other], ['chosen-by-the-client', 'chosen-by-the-client']] as const) {
      const answer = await login({ _login: field, token: RIGHT }, cookie);
      expect(answer.status, `${field} / ${cookie}`).toBe(403);
      expect(await answer.text()).toContain('The sign-in form expired');
    }
    expect((await login({ _login: issued, token: RIGHT }, issued)).status).toBe(303);
  });

  it('reads no body without a valid nonce cookie, and refuses one past 64 KiB with 413, declared or streamed', async () => {
    const { app, form } = dashboard();
    const stranger = watchedBody();
    const refused = await app.request('/ui/login', streaming({ method: 'POST', body: stranger.body }));
    expect(refused.status).toBe(403);
    expect(stranger.seen.read).toBe(false);

    const nonce = await form();
    const big = `_login=${nonce}&token=${'a'.repeat(64 * 1024)}`;
    const headers = { cookie: `oncehook_login=${nonce}`, 'content-type': 'application/x-www-form-urlencoded' };
    const declared = await app.request('/ui/login', { method: 'POST', headers: { ...headers, 'content-length': String(big.length) }, body: big });
    expect(declared.status).toBe(413);
    expect(await declared.text()).toMatch(/more than 64 KiB/);
    const streamed = await app.request('/ui/login', streaming({ method: 'POST', headers, body: watchedBody().body }));
    expect(streamed.status).toBe(413);
  });

  it('slows guessing: past ten wrong tokens from an address, 429 with Retry-After, even for the right one; each logged without it', async () => {
    const { form, login, lines } = dashboard();
    const nonce = await form();
    for (let i = 0; i < 10; i++) expect((await login({ _login: nonce, token: `guess-${i}` }, nonce)).status).toBe(401);
    for (const token of ['guess-10', RIGHT]) {
      const answer = await login({ _login: nonce, token }, nonce);
      expect(answer.status).toBe(429);
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await answer.text()).toMatch(/Too many wrong tokens from your address/);
    }
    expect(lines.filter((line) => line.msg === 'sign-in refused: not an admin token')).toHaveLength(10);
    expect(lines[0]).toMatchObject({ level: 40, path: '/ui/login' });
    expect(JSON.stringify(lines)).not.toMatch(/guess|alice-secret/);
  });
});

describe('a session cookie', () => {
  // Its signature answers whether a guessed token was right: a forged session is a guess like a sign-in.
  it('that does not verify counts as a wrong token: past ten, 429 even for a real session', async () => {
    const { app, lines } = dashboard();
    const page = (value: string) => app.request('/ui/attention', { headers: { cookie: `${SESSION_COOKIE}=${value}` } });
    const forged = signSession(new AdminTokens({ alice: 'a-guess-at-alices-token-000' }), 'alice')!;
    for (let i = 0; i < 10; i++) expect((await page(forged)).status).toBe(303);
    const real = await page(signSession(tokens, 'alice')!);
    expect(real.status).toBe(429);
    expect(Number(real.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(lines.filter((line) => line.msg === 'sign-in refused: not an admin token')).toHaveLength(10);
    // An expired or malformed cookie checks nothing, so it is no guess: it only leads to the sign-in form.
    const fresh = dashboard();
    const expired = signSession(tokens, 'alice', Date.now() - 13 * 3600 * 1000)!;
    for (let i = 0; i < 12; i++) expect((await fresh.app.request('/ui/attention', { headers: { cookie: `${SESSION_COOKIE}=${i % 2 ? expired : 'junk'}` } })).status).toBe(303);
    expect(fresh.lines).toHaveLength(0);
  });
});

describe('a signed-in form', () => {
  it('past 64 KiB is refused with 413; without a session, it is never read', async () => {
    const { app } = dashboard();
    const session = signSession(tokens, 'alice')!;
    const csrf = csrfToken(tokens, 'alice', session);
    const big = `_csrf=${csrf}&note=${'n'.repeat(64 * 1024)}`;
    const headers = { cookie: `${SESSION_COOKIE}=${session}`, 'content-type': 'application/x-www-form-urlencoded' };
    const refused = await app.request('/ui/tasks/t_1/cancel', { method: 'POST', headers, body: big });
    expect(refused.status).toBe(413);
    const stranger = watchedBody();
    const unread = await app.request('/ui/tasks/t_1/cancel', streaming({ method: 'POST', body: stranger.body }));
    expect(unread.status).toBe(303);
    expect(stranger.seen.read).toBe(false);
  });
});
