import { sql } from 'drizzle-orm';
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRoutes } from '../../src/api/routes.ts';
import { SignInThrottle } from '../../src/http/sign-in-throttle.ts';
import { AdminTokens, type AdminTokenSetting } from '../../src/http/tokens.ts';
import { parseConfig } from '../../src/config/load.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { uiRoutes } from '../../src/ui/routes.tsx';
import { SESSION_COOKIE, signSession } from '../../src/ui/session.ts';
import { adminApi, ALL_TOKENS, setState } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { capture } from '../support/log-lines.ts';

const SUPPORT = 'support-read-only-token';
const TOKENS: AdminTokenSetting = { ...ALL_TOKENS, support: { token: SUPPORT, access: 'read' } };
const ORIGIN = 'http://127.0.0.1:9';
const config = shopConfig({ crm: { url: `${ORIGIN}/crm`, idempotency: 'key' } }, {});
Object.assign(config, { alerts: { ops: { url: `${ORIGIN}/alerts`, format: 'json', on: ['failed'] } } });

let gateway: TestGateway;
let failed: string;
let succeeded: string;

beforeAll(async () => {
  gateway = await startTestGateway(config, { role: 'web', adminToken: TOKENS });
  const db = gateway.store.db;
  for (const [i, state] of ['failed', 'succeeded'].entries()) {
    const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: `read-only-${i}` }));
    await setState(db, answer.json.tasks[0].id, state);
  }
  [failed, succeeded] = (await rowsOf<{ id: string }>(db, sql`select id from tasks order by state`)).map((row) => row.id) as [string, string];
  await db.execute(sql`insert into destinations (origin, paused_at, paused_reason) values (${ORIGIN}, now(), '401 refused')`);
});
afterAll(async () => gateway?.close());

/** What can change: the tasks' states, the operator actions, the destinations' pauses, the alert messages. */
const everything = async () =>
  JSON.stringify(
    await rowsOf(
      gateway.store.db,
      sql`select (select json_agg(t.state order by t.id) from tasks t) as tasks, (select count(*)::int from operator_actions) as actions,
                 (select json_agg(d.paused_at) from destinations d) as paused`,
    ),
  );

/** Every route of an app with `method`, its parameters filled in: a new route is checked as soon as it exists. */
function routesOf(app: Hono, method: string, prefix = ''): string[] {
  const values: Record<string, string> = { id: failed, origin: encodeURIComponent(ORIGIN), name: 'ops' };
  return app.routes
    .filter((route) => route.method === method)
    .map((route) => prefix + route.path.replace(/:(\w+)(?:\{(\w+)[^}]*\})?/g, (_, name: string, first?: string) => first ?? values[name] ?? 'retry'));
}

const fakeDeps = { store: {} as never, config: parseConfig(JSON.stringify(config), 'test').config, tokens: new AdminTokens(TOKENS), stats: {} as never, tasks: {} as never, transforms: {} as never, configVersion: 'test' };
const throttle = new SignInThrottle(capture('silent').logger);

describe('a read-only token (label:token:read)', () => {
  it('is refused every route of the API that changes something, with 403 read_only_token, and nothing changes', async () => {
    const api = adminApi(gateway.url, SUPPORT);
    const posts = routesOf(apiRoutes({ ...fakeDeps, throttle }), 'POST');
    expect(posts.length).toBeGreaterThanOrEqual(9);
    const before = await everything();
    for (const path of posts) {
      const answer = await api(path, { body: { note: 'n', reference: 'r', owner: 'me', state: 'failed', dryRun: true } });
      expect([path, answer.status, answer.json.error.code]).toEqual([path, 403, 'read_only_token']);
      expect(answer.json.error.message).toMatch(/"support" is read-only/);
    }
    expect(await everything()).toBe(before);
    // A token that can decide goes through the same route.
    expect((await adminApi(gateway.url)(`/api/tasks/${failed}/assign`, { body: { owner: 'alice' } })).status).toBe(200);
  });

  it('reads everything the API lists', async () => {
    const api = adminApi(gateway.url, SUPPORT);
    for (const path of ['/api/tasks', `/api/tasks/${failed}`, '/api/deliveries', '/api/destinations', '/api/alerts', '/api/stats']) {
      expect([path, (await api(path)).status]).toEqual([path, 200]);
    }
  });

  describe('on the dashboard', () => {
    // One session each: the CSRF token a page carries is its session's.
    const sessions = new Map(['support', 'admin'].map((label) => [label, `${SESSION_COOKIE}=${signSession(new AdminTokens(TOKENS), label)}`]));
    const session = (label: string) => sessions.get(label)!;
    const read = async (path: string, label = 'support') => {
      const answer = await fetch(`${gateway.url}${path}`, { headers: { cookie: session(label) } });
      expect([path, answer.status]).toEqual([path, 200]);
      return answer.text();
    };
    const forms = (html: string) => [...html.matchAll(/<form[^>]*method="post"[^>]*action="([^"]+)"/g)].map((m) => m[1]);
    const pages = () => [`/ui/tasks/${failed}`, `/ui/tasks/${succeeded}`, '/ui/attention', '/ui/tasks?state=failed', '/ui/tasks/bulk/retry?state=failed', '/ui/destinations', '/ui/alerts', '/ui/home'];

    it('shows every page with no form that decides, and says the token is read-only', async () => {
      for (const path of pages()) {
        const html = await read(path);
        expect([path, forms(html)]).toEqual([path, ['/ui/logout']]);
        expect(html).toContain('(read-only)');
      }
      // The same pages offer decisions to a token that can decide.
      const offered = (await Promise.all(pages().map((path) => read(path, 'admin')))).flatMap(forms);
      for (const action of [`${failed}/retry`, `${succeeded}/replay`, '/ui/tasks/bulk/retry', '/ui/destinations/resume', '/ui/alerts/ops/test']) {
        expect([action, offered.some((form) => form!.endsWith(action))]).toEqual([action, true]);
      }
    });

    it('refuses every form post but the logout with 403, and nothing changes', async () => {
      const csrf = /name="_csrf" value="([^"]+)"/.exec(await read('/ui/home'))![1]!;
      const posts = routesOf(uiRoutes({ ...fakeDeps, throttle, logger: capture('silent').logger }), 'POST', '/ui').filter((path) => path !== '/ui/login');
      expect(posts).toContain('/ui/logout');
      expect(posts.length).toBeGreaterThanOrEqual(5);
      const before = await everything();
      for (const path of posts) {
        const form = new URLSearchParams({ _csrf: csrf, note: 'n', reference: 'r', origin: ORIGIN, state: 'failed', seen: '1', after: 'none' });
        const answer = await fetch(`${gateway.url}${path}`, { method: 'POST', redirect: 'manual', headers: { cookie: session('support') }, body: form });
        if (path === '/ui/logout') expect([path, answer.status]).toEqual([path, 303]);
        else {
          expect([path, answer.status]).toEqual([path, 403]);
          expect(await answer.text()).toContain('a read-only token');
        }
      }
      expect(await everything()).toBe(before);
    });
  });
});
