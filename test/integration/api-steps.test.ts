import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminApi, ADMIN_TOKEN, setState, signedInDashboard } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

let gateway: TestGateway;
let api: ReturnType<typeof adminApi>;
let dashboard: ReturnType<typeof signedInDashboard>;

beforeAll(async () => {
  // Web role: nothing forwards, so each task stays in the state the test puts it in.
  gateway = await startTestGateway(
    shopConfig({ crm: { url: 'http://127.0.0.1:9/crm' }, mail: { url: 'http://127.0.0.1:9/mail', after: 'crm' } }),
    { role: 'web', adminToken: ADMIN_TOKEN },
  );
  api = adminApi(gateway.url);
  dashboard = signedInDashboard(gateway.url);
});
afterAll(async () => gateway?.close());

describe('a step waiting for the one before it', () => {
  // A step whose predecessor could no longer succeed stayed pending with nothing saying why.
  it('says what it waits for, and what a person can do once that one needs a person or was cancelled', async () => {
    const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'steps-1' }));
    const { crm, mail } = Object.fromEntries(answer.json.tasks.map((t: { id: string; action: string }) => [t.action, t.id])) as Record<string, string>;

    const waiting = (await api(`/api/tasks/${mail}`)).json;
    expect(waiting.summary).toContain(`; waits for ${crm} (pending)`);
    expect(waiting.nextDecision).toBeNull();

    await setState(gateway.store.db, crm!, 'needs_review');
    expect((await api(`/api/tasks/${mail}`)).json.nextDecision).toBe(
      `It is sent once ${crm} succeeds, which is needs_review: settle that one first (oncehook explain ${crm}), or cancel this step, or resolve it if it was done by hand.`,
    );

    await setState(gateway.store.db, crm!, 'cancelled');
    const stranded = (await api(`/api/tasks/${mail}`)).json;
    expect(stranded.summary).toContain(`; waits for ${crm} (cancelled)`);
    expect(stranded.nextDecision).toMatch(/that was cancelled: cancel this step too, or resolve it/);
    expect(await signedInDashboard(gateway.url)(`/ui/tasks/${mail}`)).toContain('that was cancelled');

    await setState(gateway.store.db, crm!, 'succeeded');
    expect((await api(`/api/tasks/${mail}`)).json.summary).not.toContain('waits for');
  });

  // Following "retry" there sent the task again under its own key after the replay had made the effect.
  it('a failed task whose replay succeeded says so, and that a retry would be a second effect', async () => {
    const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'steps-2' }));
    const crm = answer.json.tasks.find((t: { action: string }) => t.action === 'crm').id as string;
    await setState(gateway.store.db, crm, 'failed');
    const replay = await api(`/api/tasks/${crm}/replay`, { body: { note: 'the CRM is back' } });
    expect(replay.status).toBe(201);
    expect((await api(`/api/tasks/${crm}`)).json.nextDecision).toMatch(/^It was not done/);
    await setState(gateway.store.db, replay.json.id, 'succeeded');
    expect((await api(`/api/tasks/${crm}`)).json.nextDecision).toBe(
      `Its replay ${replay.json.id} succeeded, so the effect exists: the attention queue no longer lists this one: resolve it with that replay's reference to record so (a step waiting for it then goes), or leave it. A retry would send it again under this task's own key — a second effect. Nobody has taken it yet.`,
    );
  });
});

/** The queue as each surface shows it: the API's list, and the counts of /api/stats, /metrics and the dashboard. */
async function queueEverywhere() {
  const listed = (await api('/api/tasks?attention=true&limit=500')).json.items as { id: string; strandedBy: unknown }[];
  const stats = (await api('/api/stats')).json.needsAttention.count;
  const page = await dashboard('/ui/attention');
  const badge = Number(/<span class="count">(\d+)<\/span>/.exec(page)?.[1] ?? 0);
  // A scrape reads the database at most once a second: wait for one that read it after the change.
  let metric = NaN;
  for (const started = Date.now(); metric !== listed.length && Date.now() - started < 3000; await new Promise((r) => setTimeout(r, 200))) {
    metric = Number(/^oncehook_tasks_needing_attention (\d+)$/m.exec(await (await fetch(`${gateway.url}/metrics`)).text())?.[1]);
  }
  expect({ stats, metric, badge }).toEqual({ stats: listed.length, metric: listed.length, badge: listed.length });
  return { listed, page, ids: listed.map((task) => task.id) };
}

const tasksOf = async (eventId: string) => {
  const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId }));
  return Object.fromEntries(answer.json.tasks.map((t: { id: string; action: string }) => [t.action, t.id])) as { crm: string; mail: string };
};

describe('the attention queue and steps', () => {
  // The explain view said such a step waited for ever, but no queue listed it: nobody was asked to settle it.
  it('lists a step stranded behind a cancelled one, says why, and counts it on every surface', async () => {
    const { crm, mail } = await tasksOf('steps-3');
    expect((await queueEverywhere()).ids).not.toContain(mail);
    await api(`/api/tasks/${crm}/cancel`, { body: { note: 'not wanted' } });

    const queue = await queueEverywhere();
    expect(queue.ids).toContain(mail);
    expect(queue.listed.find((task) => task.id === mail)!.strandedBy).toEqual({ id: crm, state: 'cancelled' });
    expect(queue.page).toContain(`id="${mail}"`);
    expect(queue.page).toContain(`stranded: predecessor cancelled: waits for <a href="/ui/tasks/${crm}">${crm}</a> (cancelled)`);
    expect((await api(`/api/tasks?attention=true&state=pending&eventId=steps-3`)).json.items.map((t: { id: string }) => t.id)).toEqual([mail]);

    await api(`/api/tasks/${mail}/cancel`, { body: { note: 'its predecessor was cancelled' } });
    expect((await queueEverywhere()).ids).not.toContain(mail);
  });

  // A failed task stayed in the queue for ever after its replay had made the effect: the person's work was done.
  it('drops a failed task once a replay down its chain succeeded, and lists the step still waiting for it', async () => {
    const { crm, mail } = await tasksOf('steps-4');
    await setState(gateway.store.db, crm, 'failed');
    const first = (await api(`/api/tasks/${crm}/replay`, { body: { note: 'the CRM is back' } })).json.id as string;
    await setState(gateway.store.db, first, 'failed');
    expect((await queueEverywhere()).ids).toEqual(expect.arrayContaining([crm, first]));

    const second = (await api(`/api/tasks/${first}/replay`, { body: { note: 'again' } })).json.id as string;
    await setState(gateway.store.db, second, 'succeeded');
    const queue = await queueEverywhere();
    expect(queue.ids).not.toContain(crm);
    expect(queue.ids).not.toContain(first);
    expect(queue.page).not.toContain(`id="${crm}"`);
    // The step waits for the original task, which stays failed: it is sent only once a person resolves that one.
    expect(queue.listed.find((task) => task.id === mail)!.strandedBy).toEqual({ id: crm, state: 'failed' });
    expect((await api(`/api/tasks/${crm}`)).json.nextDecision).toMatch(new RegExp(`^Its replay ${second} succeeded`));

    await api(`/api/tasks/${crm}/resolve`, { body: { reference: 'CRM-7', note: 'made by the replay' } });
    expect((await queueEverywhere()).ids).not.toContain(mail);
  });
});
