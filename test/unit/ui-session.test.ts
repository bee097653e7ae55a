import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { SignInThrottle } from '../../src/http/sign-in-throttle.ts';
import { AdminTokens } from '../../src/http/tokens.ts';
import { createLogger } from '../../src/log.ts';
import type { UiEnv } from '../../src/ui/env.ts';
import { uiRoutes } from '../../src/ui/routes.tsx';
import { localPath, requireCsrf, requireSession } from '../../src/ui/guard.tsx';
import { csrfMatches, csrfToken, SESSION_COOKIE, SESSION_SECONDS, signSession, verifySession } from '../../src/ui/session.ts';

const tokens = new AdminTokens({ alice: 'alice-secret-token', bob: 'bob-secret-token' });
const NOW = Date.UTC(2025, 0, 1);

describe('dashboard session cookies', () => {
  it('carry the label and an expiry, signed — never the token — and verify back to the label', () => {
    const value = signSession(tokens, 'alice', NOW)!;
    expect(value).not.toContain('alice-secret-token');
    expect(value).toMatch(/^[\w-]+\.\d+\.[\w-]{43}$/);
    expect(verifySession(tokens, value, NOW)).toBe('alice');
    expect(signSession(tokens, 'mallory', NOW)).toBeNull();
  });

  it('expire after SESSION_SECONDS', () => {
    const value = signSession(tokens, 'alice', NOW)!;
    expect(verifySession(tokens, value, NOW + SESSION_SECONDS * 1000 - 1000)).toBe('alice');
    expect(verifySession(tokens, value, NOW + SESSION_SECONDS * 1000)).toBeNull();
  });

  it('refuse a changed label, expiry or signature, and garbage', () => {
    const value = signSession(tokens, 'alice', NOW)!;
    const [label, expiry, signature] = value.split('.') as [string, string, string];
    const bob = Buffer.from('bob').toString('base64url');
    expect(verifySession(tokens, `${bob}.${expiry}.${signature}`, NOW)).toBeNull();
    expect(verifySession(tokens, `${label}.${Number(expiry) + 86_400}.${signature}`, NOW)).toBeNull();
    const flipped = signature.slice(0, -2) + (signature.at(-2) === 'A' ? 'B' : 'A') + signature.at(-1);
    expect(verifySession(tokens, `${label}.${expiry}.${flipped}`, NOW)).toBeNull();
    for (const junk of [undefined, '', 'alice', `${label}.${expiry}`, `${value}.x`, 'a.b.c']) expect(verifySession(tokens, junk, NOW)).toBeNull();
  });

  it('end when the token is revoked or rotated, and work on any instance that knows the token', () => {
    const value = signSession(tokens, 'alice', NOW)!;
    expect(verifySession(new AdminTokens({ alice: 'alice-secret-token' }), value, NOW)).toBe('alice');
    expect(verifySession(new AdminTokens({ alice: 'alice-rotated-token', bob: 'bob-secret-token' }), value, NOW)).toBeNull();
    expect(verifySession(new AdminTokens({ bob: 'bob-secret-token' }), value, NOW)).toBeNull();
  });

  it('derive a CSRF token per session that is not the session signature', () => {
    const one = signSession(tokens, 'alice', NOW)!;
    const two = signSession(tokens, 'alice', NOW + 1000)!;
    const csrf = csrfToken(tokens, 'alice', one);
    expect(csrf).not.toBe(csrfToken(tokens, 'alice', two));
    expect(one).not.toContain(csrf);
    expect(csrfMatches(csrf, csrf)).toBe(true);
    expect(csrfMatches(csrf, csrfToken(tokens, 'alice', two))).toBe(false);
    expect(csrfMatches(csrf, undefined)).toBe(false);
    expect(csrfMatches(csrf, csrf.slice(1))).toBe(false);
  });

  it('follow only /ui paths after login or a decision', () => {
    expect(localPath('/ui/tasks/t_1', '/ui')).toBe('/ui/tasks/t_1');
    expect(localPath('/ui/attention?state=failed', '/ui')).toBe('/ui/attention?state=failed');
    const unprintable = ['/ui/tasks\r\nSet-Cookie: x=1', '/ui/a\tb', '/ui/a b', '/ui/caf\u00e9', '/ui/\u2028'];
    for (const bad of ['https://evil.example', '//evil.example', '/ui//evil.example', '/api/tasks', '/uix', '/ui\\evil', undefined, ...unprintable]) {
      expect(localPath(bad, '/ui')).toBe('/ui');
    }
  });
});

describe('requireSession', () => {
  const app = new Hono<UiEnv>();
  app.use('/ui/*', requireSession(tokens, new SignInThrottle(createLogger('silent'))), requireCsrf);
  app.get('/ui/page', (c) => c.text(`hello ${c.get('actor')}`));
  app.post('/ui/do', (c) => c.text(`done by ${c.get('actor')}`));
  const session = signSession(tokens, 'bob')!;
  const cookie = `${SESSION_COOKIE}=${session}`;
  const form = (fields: Record<string, string>) => ({
    method: 'POST',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });

  it('sends a visitor without a valid session to the login page, and clears a stale cookie', async () => {
    const none = await app.request('/ui/page?x=1');
    expect(none.status).toBe(303);
    expect(none.headers.get('location')).toBe('/ui/login?next=%2Fui%2Fpage%3Fx%3D1');
    // The signature's last base64url character carries four bits: swap it for another with different bits.
    const tampered = session.slice(0, -1) + (session.endsWith('A') ? 'E' : 'A');
    const stale = await app.request('/ui/page', { headers: { cookie: `${SESSION_COOKIE}=${tampered}` } });
    expect(stale.status).toBe(303);
    expect(stale.headers.get('set-cookie')).toMatch(/oncehook_session=;.*Max-Age=0/);
  });

  it('lets a signed-in GET through as the label', async () => {
    const answer = await app.request('/ui/page', { headers: { cookie } });
    expect(await answer.text()).toBe('hello bob');
  });

  it('refuses a POST without the CSRF field or with another session\'s, and accepts the right one', async () => {
    expect((await app.request('/ui/do', form({ note: 'x' }))).status).toBe(403);
    const other = csrfToken(tokens, 'alice', signSession(tokens, 'alice')!);
    expect((await app.request('/ui/do', form({ _csrf: other }))).status).toBe(403);
    const ok = await app.request('/ui/do', form({ _csrf: csrfToken(tokens, 'bob', session) }));
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe('done by bob');
  });
});

describe('the dashboard routes without a database', () => {
  const deps = {
    store: {} as never,
    config: { sources: {}, limits: { writeStallMs: 30_000 } } as never,
    logger: console as never,
    stats: {} as never,
    tasks: {} as never,
    throttle: new SignInThrottle(createLogger('silent')),
    transforms: {} as never,
  };

  it('are off, saying why, when no admin token is configured', async () => {
    const answer = await uiRoutes({ ...deps, tokens: null }).request('/attention');
    expect(answer.status).toBe(404);
    expect(await answer.text()).toMatch(/dashboard is off/);
  });

  it('log in with the token into an HttpOnly, SameSite=Strict cookie for /ui, Secure behind https', async () => {
    const app = new Hono().route('/ui', uiRoutes({ ...deps, tokens }));
    const form = await app.request('/ui/login?next=%2Fui%2Fstats');
    const nonce = /oncehook_login=([\w.-]+)/.exec(form.headers.get('set-cookie') ?? '')![1]!;
    expect(await form.text()).toContain(`value="${nonce}"`);
    const login = (fields: Record<string, string>, cookie = `oncehook_login=${nonce}`) =>
      app.request('/ui/login', {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-proto': 'https' },
        body: new URLSearchParams(fields).toString(),
      });
    expect((await login({ _login: nonce, token: 'alice-secret-token' }, '')).status).toBe(403);
    expect((await login({ _login: 'forged', token: 'alice-secret-token' })).status).toBe(403);
    expect((await login({ _login: nonce, token: 'wrong' })).status).toBe(401);
    const ok = await login({ _login: nonce, token: 'alice-secret-token', next: '/ui/stats' });
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toBe('/ui/stats');
    const cookie = ok.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^oncehook_session=[\w.-]+; Max-Age=43200; Path=\/ui; HttpOnly; Secure; SameSite=Strict$/);
    expect(cookie).not.toContain('alice-secret-token');
    // A `next` that cannot go into a Location header is dropped for the default, not answered with a 500.
    const crlf = await login({ _login: nonce, token: 'alice-secret-token', next: '/ui/stats\r\nX-Evil: 1' });
    expect(crlf.status).toBe(303);
    expect(crlf.headers.get('location')).toBe('/ui/home');
  });
});
