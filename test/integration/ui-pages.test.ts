import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminTokens } from '../../src/http/tokens.ts';
import { SESSION_COOKIE, signSession } from '../../src/ui/session.ts';
import { ADMIN_TOKEN, adminApi, ALL_TOKENS, setState, signedInDashboard } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

let gateway: TestGateway;
let api: ReturnType<typeof adminApi>;
let dashboard: ReturnType<typeof signedInDashboard>;
const cookie = `${SESSION_COOKIE}=${signSession(new AdminTokens(ADMIN_TOKEN), 'admin')}`;

beforeAll(async () => {
  // Web role: nothing forwards, so each task stays in the state the test puts it in.
  gateway = await startTestGateway(shopConfig({ crm: { url: 'http://127.0.0.1:9/crm', idempotency: 'key' }, mail: { url: 'http://127.0.0.1:9/mail' } }), {
    role: 'web',
    adminToken: ALL_TOKENS,
  });
  api = adminApi(gateway.url);
  dashboard = signedInDashboard(gateway.url);
});
afterAll(async () => gateway?.close());

/** Three events' tasks under a source of their own, so other tests' tasks do not count: crm failed, mail succeeded. */
async function tasksOfOwnSource(): Promise<{ source: string; crm: string[]; mail: string[] }> {
  const source = `ui-${Math.random().toString(36).slice(2)}`;
  const made = { source, crm: [] as string[], mail: [] as string[] };
  for (let i = 0; i < 3; i++) {
    const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: `${source}-${i}` }));
    for (const task of answer.json.tasks as { id: string; action: 'crm' | 'mail' }[]) {
      made[task.action].push(task.id);
      await setState(gateway.store.db, task.id, task.action === 'crm' ? 'failed' : 'succeeded');
      await gateway.store.db.execute(sql`update tasks set source = ${source} where id = ${task.id}`);
    }
  }
  return made;
}

/** The IDs of the rows the Tasks page lists. */
const listed = (html: string) => [...html.matchAll(/<tr id="(t_[^"]+)"/g)].map((m) => m[1]);

/** A page as the admin signed in with `cookie`: its forms carry that session's CSRF token. */
const read = async (path: string) => (await fetch(`${gateway.url}${path}`, { headers: { cookie } })).text();

/** A form POST as the admin signed in with `cookie`, with the CSRF token of a page `read` served. */
async function submit(path: string, form: Record<string, string>, from: string): Promise<Response> {
  const csrf = /name="_csrf" value="([^"]+)"/.exec(from)![1]!;
  return fetch(`${gateway.url}${path}`, { method: 'POST', redirect: 'manual', headers: { cookie }, body: new URLSearchParams({ ...form, _csrf: csrf }) });
}

/** A totals table's rows, by key, from the page's HTML. */
function totals(html: string, id: string): Record<string, number> {
  const table = html.slice(html.indexOf(`id="${id}"`));
  const body = table.slice(0, table.indexOf('</tbody>'));
  return Object.fromEntries([...body.matchAll(/<tr data-key="([a-z_]+)">.*?<td class="num">([\d,]+)<\/td>/g)].map((m) => [m[1], Number(m[2]!.replaceAll(',', ''))]));
}

/** The message a redirect after a form carries to the next page. */
const flashOf = (answer: Response) => JSON.parse(decodeURIComponent(/oncehook_flash=([^;]+)/.exec(answer.headers.get('set-cookie') ?? '')![1]!)) as { kind: string; text: string };

describe('the home page', () => {
  it('is where /ui leads', async () => {
    const answer = await fetch(`${gateway.url}/ui`, { redirect: 'manual', headers: { cookie } });
    expect(answer.status).toBe(303);
    expect(answer.headers.get('location')).toBe('/ui/home');
  });

  it('charts the hour and the day with the counts of /api/stats, and the queue as the attention page counts it', async () => {
    const first = shopifyDelivery({ eventId: 'home-1' });
    const answers = [await post(gateway.url, 'shop', first), await post(gateway.url, 'shop', first)];
    await setState(gateway.store.db, answers[0]!.json.tasks[0].id, 'failed');
    const stats = (await api('/api/stats')).json;
    expect(stats.decisions.duplicate_delivery).toBeGreaterThan(0);
    for (const range of ['hour', 'day']) {
      const html = await dashboard(`/ui/home?range=${range}`);
      expect(totals(html, 'deliveries-numbers')).toEqual(stats.decisions);
      const queue = totals(html, 'queue-numbers');
      expect(Object.values(queue).reduce((a, b) => a + b, 0)).toBe(stats.needsAttention.count);
      expect(queue.failed).toBeGreaterThan(0);
      expect(html).toContain(`<title id="deliveries-chart-title">Deliveries by decision, the last ${range}</title>`);
      expect(html).toContain('no attempts in this window');
    }
  });

  it('refuses a range it does not draw, naming the ones it does', async () => {
    expect(await dashboard('/ui/home?range=week', 400)).toMatch(/range: Invalid option: expected one of &quot;hour&quot;\|&quot;day&quot;/);
  });
});

describe('the Tasks page', () => {
  it('filters as the API does: several states, repeated or comma-separated, source, action, owner and event', async () => {
    const { source, crm, mail } = await tasksOfOwnSource();
    const both = (await api(`/api/tasks?source=${source}&state=failed,succeeded`)).json.items.map((t: { id: string }) => t.id);
    expect(both).toHaveLength(6);
    expect(listed(await dashboard(`/ui/tasks?source=${source}&state=failed&state=succeeded`))).toEqual(both);
    expect(listed(await dashboard(`/ui/tasks?source=${source}&state=failed,succeeded`))).toEqual(both);
    expect(listed(await dashboard(`/ui/tasks?source=${source}&action=mail&state=`))).toEqual([...mail].reverse());
    await api(`/api/tasks/${crm[0]}/assign`, { body: { owner: 'dana' } });
    expect(listed(await dashboard(`/ui/tasks?owner=dana&source=${source}`))).toEqual([crm[0]]);
    expect(listed(await dashboard(`/ui/tasks?eventId=${source}-1`)).sort()).toEqual([crm[1], mail[1]].sort());
    expect(listed(await dashboard(`/ui/tasks?source=${source}&attention=true`)).sort()).toEqual([...crm].sort());
  });

  it('refuses what the API refuses, in its words', async () => {
    expect(await dashboard('/ui/tasks?attention=true&state=succeeded', 400)).toContain('succeeded: not among the states attention lists');
    expect(await dashboard('/ui/tasks?state=done', 400)).toContain('state.0: Invalid option: expected one of');
  });

  it('offers a bulk decision only over a filter the API applies whole', async () => {
    expect(await dashboard('/ui/tasks?owner=dana&state=failed')).toContain('this list also filters by owner');
    expect(await dashboard('/ui/tasks?owner=dana&state=failed')).not.toContain('/ui/tasks/bulk/');
    expect(await dashboard('/ui/tasks')).toContain('Choose a state, a source or an action');
    const bySource = await dashboard('/ui/tasks?source=shop');
    expect(bySource).toContain('href="/ui/tasks/bulk/retry?source=shop"');
    expect(bySource).not.toContain('/ui/tasks/bulk/replay');
  });
});

describe('bulk decisions from the dashboard', () => {
  it("shows the API's dry run, then retries on a note, recorded as the signed-in person's", async () => {
    const { source, crm } = await tasksOfOwnSource();
    const dry = (await api('/api/tasks/bulk/retry', { body: { source, note: 'x', dryRun: true } })).json;
    expect(dry.count).toBe(3);
    const page = await read(`/ui/tasks/bulk/retry?source=${source}`);
    expect(page).toMatch(/<tr data-key="count"><th>would retry<\/th><td class="num"><strong>3<\/strong>/);
    expect(page).toContain('Retry 3 tasks');

    const noNote = await submit('/ui/tasks/bulk/retry', { source, state: '', action: '', seen: '3', note: ' ' }, page);
    expect(noNote.status).toBe(303);
    expect(noNote.headers.get('location')).toBe(`/ui/tasks/bulk/retry?source=${source}`);
    expect(flashOf(noNote)).toEqual({ kind: 'error', text: 'A bulk retry needs a note saying why.' });
    expect((await api(`/api/tasks?source=${source}&state=failed`)).json.items).toHaveLength(3);

    // One of them moved on between the dry run and the confirmation: the answer says so.
    await setState(gateway.store.db, crm[0]!, 'succeeded');
    const done = await submit('/ui/tasks/bulk/retry', { source, state: '', action: '', seen: '3', note: 'the CRM is back' }, page);
    expect(done.headers.get('location')).toBe(`/ui/tasks?source=${source}`);
    expect(flashOf(done)).toEqual({ kind: 'ok', text: 'Retried 2 tasks. The dry run counted 3: tasks changed in between.' });
    const retried = (await api(`/api/tasks/${crm[1]}`)).json;
    expect(retried.state).toBe('pending');
    expect(retried.operatorActions.at(-1)).toMatchObject({ kind: 'retry', actor: 'admin', note: 'the CRM is back', detail: { from: 'failed', bulk: true } });
  });

  it("a replay without a state goes back to the list with the API's refusal; with one, it replays", async () => {
    const { source, mail } = await tasksOfOwnSource();
    const refused = await fetch(`${gateway.url}/ui/tasks/bulk/replay?source=${source}`, { redirect: 'manual', headers: { cookie } });
    expect(refused.status).toBe(303);
    expect(refused.headers.get('location')).toBe(`/ui/tasks?source=${source}`);
    expect(flashOf(refused).text).toMatch(/^No bulk replay: state: a bulk replay needs it/);

    const page = await read(`/ui/tasks/bulk/replay?source=${source}&state=succeeded`);
    const done = await submit('/ui/tasks/bulk/replay', { source, state: 'succeeded', action: '', seen: '3', note: 'the CRM lost them' }, page);
    expect(flashOf(done)).toEqual({ kind: 'ok', text: 'Replayed 3 tasks.' });
    for (const id of mail) expect((await api(`/api/tasks/${id}`)).json.replays).toHaveLength(1);
    // Each is now replayed: a second bulk replay passes over them, and its dry run offers nothing to confirm.
    const again = await dashboard(`/ui/tasks/bulk/replay?source=${source}&state=succeeded`);
    expect(again).toMatch(/<tr data-key="skippedByReplay"><th>passed over<\/th><td class="num">3<\/td>/);
    expect(again).toContain('Nothing to replay.');
    expect(again).not.toContain('<form class="decision confirm"');
  });

  it('refuses a confirmation without the CSRF token', async () => {
    const forged = await fetch(`${gateway.url}/ui/tasks/bulk/retry`, { method: 'POST', redirect: 'manual', headers: { cookie }, body: new URLSearchParams({ source: 'shop', note: 'x' }) });
    expect(forged.status).toBe(403);
  });
});
