import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { destinations } from '../../src/store/schema.ts';
import { adminApi, ADMIN_TOKEN, signedInDashboard, setState } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

const CRM = 'http://127.0.0.1:9';
let gateway: TestGateway;
let api: ReturnType<typeof adminApi>;
let dashboard: ReturnType<typeof signedInDashboard>;
/** Tasks by what they wait for: `held` and `open` pending, one for each destination, and `failed`. */
let task: { held: string; open: string; failed: string };

beforeAll(async () => {
  // Web role: nothing forwards, so each task stays in the state the test puts it in.
  gateway = await startTestGateway(shopConfig({ crm: { url: `${CRM}/crm` }, mail: { url: 'http://127.0.0.1:10/mail' } }), {
    role: 'web',
    adminToken: ADMIN_TOKEN,
  });
  api = adminApi(gateway.url);
  dashboard = signedInDashboard(gateway.url);
  const tasksOf = async (eventId: string) => {
    const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId }));
    return Object.fromEntries(answer.json.tasks.map((t: { id: string; action: string }) => [t.action, t.id])) as { crm: string; mail: string };
  };
  const [first, second] = [await tasksOf('attention-1'), await tasksOf('attention-2')];
  task = { held: first.crm, open: first.mail, failed: second.crm };
  await setState(gateway.store.db, second.mail, 'succeeded');
  await setState(gateway.store.db, task.failed, 'failed');
});
afterAll(async () => {
  await gateway?.close();
});

const ids = (answer: { json: { items: { id: string }[] } }) => answer.json.items.map((t) => t.id).sort();

describe('a dashboard page opened from a link', () => {
  it('ignores parameters it does not know, and says what a wrong limit must be', async () => {
    const tab = await dashboard('/ui/attention?state=failed&tab=held&utm_source=newsletter');
    expect(tab).toContain(`id="${task.failed}"`);
    expect(tab).not.toContain(`id="${task.open}"`);
    expect(await dashboard('/ui/deliveries?source=shop&utm_campaign=x')).toContain('<h1>Deliveries</h1>');
    for (const limit of ['abc', '0', '2.5', '501']) {
      expect(await dashboard(`/ui/deliveries?limit=${limit}`, 400)).toContain('limit: must be a whole number of rows from 1 to 500');
    }
  });
});

describe('the attention queue and a paused destination', () => {
  it('lists a pending task only while its destination is paused, saying which holds it', async () => {
    expect(ids(await api('/api/tasks?attention=true'))).toEqual([task.failed]);
    await gateway.store.db.insert(destinations).values({ origin: CRM, pausedAt: new Date(), pausedReason: '401 refused' });

    const queue = await api('/api/tasks?attention=true');
    expect(ids(queue)).toEqual([task.held, task.failed].sort());
    expect(queue.json.items.find((t: { id: string }) => t.id === task.held)).toMatchObject({ state: 'pending', heldBy: CRM, heldFor: 'send', heldReason: '401 refused' });
    expect(queue.json.items.find((t: { id: string }) => t.id === task.failed)).toMatchObject({ heldBy: null, heldFor: null, heldReason: null });
    expect(ids(await api('/api/tasks?attention=true&state=pending'))).toEqual([task.held]);
    expect(ids(await api('/api/tasks?attention=true&state=failed'))).toEqual([task.failed]);
    const pending = await api('/api/tasks?state=pending');
    expect(pending.json.items.map((t: { id: string; heldBy: string | null }) => [t.id, t.heldBy]).sort()).toEqual(
      [[task.held, CRM], [task.open, null]].sort(),
    );

    const refused = await api('/api/tasks?attention=true&state=pending,succeeded');
    expect(refused.status).toBe(400);
    expect(refused.json.error.message).toMatch(/^state: succeeded: not among the states attention lists \(.*pending\)/);
  });

  it('counts it in /api/stats and /metrics as the queue does', async () => {
    const stats = (await api('/api/stats')).json;
    expect(stats.needsAttention.count).toBe(2);
    expect(stats.heldByPausedDestinations).toMatchObject({ count: 1, oldestAgeSeconds: expect.any(Number) });
    const scrape = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(scrape).toMatch(/^oncehook_tasks_needing_attention 2$/m);
  });

  it('shows it on the dashboard: in the queue and its tab, counted, and on its page, with the way out', async () => {
    const queue = await dashboard('/ui/attention');
    expect(queue).toContain(`id="${task.held}"`);
    expect(queue).toContain(`id="${task.failed}"`);
    expect(queue).not.toContain(`id="${task.open}"`);
    expect(queue).toContain(`held: ${CRM} is paused (401 refused); <a href="/ui/destinations">resume it</a>`);
    expect(queue).toMatch(/<span class="count">2<\/span>/);
    expect(queue).toMatch(/pending \(held\)<span class="n">1<\/span>/);

    const tab = await dashboard('/ui/attention?state=pending');
    expect(tab).toContain(`id="${task.held}"`);
    expect(tab).not.toContain(`id="${task.failed}"`);
    expect(await dashboard(`/ui/tasks/${task.held}`)).toContain(`held: ${CRM} is paused`);
  });

  it('lets the task go from the queue once a person resumes the destination', async () => {
    // Named as a person copies it: with a path and a trailing slash, the origin in capitals.
    const unknown = await api(`/api/destinations/${encodeURIComponent('http://127.0.0.1:19')}/resume`, { body: { note: 'x' } });
    expect(unknown.json.error.message).toBe(`no destination http://127.0.0.1:19 is configured or on record; the destinations are: http://127.0.0.1:10, ${CRM}`);
    const resumed = await api(`/api/destinations/${encodeURIComponent(`${CRM.toUpperCase()}/crm/`)}/resume`, { body: { note: 'credentials rotated' } });
    expect(resumed.status).toBe(200);
    expect(ids(await api('/api/tasks?attention=true'))).toEqual([task.failed]);
    expect(await dashboard('/ui/attention')).not.toContain(`id="${task.held}"`);
  });
});
