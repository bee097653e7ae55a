import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveriesView } from '../../src/cli/views.ts';
import { adminApi, ADMIN_TOKEN, followPages, setState, signedInDashboard } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { engine, holdTransaction } from '../support/engine.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

let gateway: TestGateway;
let api: ReturnType<typeof adminApi>;

beforeAll(async () => {
  // A filter and topics that make no task of some deliveries: the list tells those apart from the rest.
  const crm = { url: 'http://127.0.0.1:9/crm', idempotency: 'key', topics: ['orders/create'], filter: { body: { email: { $neq: 'ignored@example.com' } } } };
  gateway = await startTestGateway(shopConfig({ crm }), { role: 'web', adminToken: ADMIN_TOKEN });
  api = adminApi(gateway.url);
});
afterAll(async () => {
  await gateway?.close();
});

/** Every page from `query` until none is ready, following nextCursor. */
const pageThrough = (query: string, cursor: string | null = null) => followPages(api, `/api/deliveries?${query}`, cursor);

describe('GET /api/deliveries', () => {
  it('answers 401 without a token or with a wrong one, and 400 naming a bad filter', async () => {
    expect((await api('/api/deliveries', { token: null })).status).toBe(401);
    expect((await api('/api/deliveries', { token: `${ADMIN_TOKEN}x` })).status).toBe(401);
    const bad = await api('/api/deliveries?decision=maybe');
    expect(bad.status).toBe(400);
    expect(bad.json.error.message).toMatch(/^decision: /);
    expect((await api('/api/deliveries?limit=501')).json.error.message).toMatch(/^limit/);
    expect((await api('/api/deliveries?order=sideways')).json.error.message).toMatch(/^order/);
  });

  it("answers 400 for a cursor it did not give out: another list's, out of range, or edited", async () => {
    const cursor = (text: string) => Buffer.from(text).toString('base64url');
    const bad = [cursor('757:t_1e5c0b7d'), cursor('5:abc'), cursor('5:99999999999999999999'), cursor(`${2n ** 64n}:1`)];
    for (const value of bad) {
      const answer = await api(`/api/deliveries?cursor=${value}`);
      expect(answer.status, Buffer.from(value, 'base64url').toString()).toBe(400);
      expect(answer.json.error.message).toMatch(/^cursor/);
    }
    const tasks = await api(`/api/tasks?cursor=${cursor(`${2n ** 64n}:t_1`)}`);
    expect(tasks.status).toBe(400);
    expect((await api(`/api/deliveries?cursor=${cursor(`${2n ** 64n - 1n}:${2n ** 63n - 1n}`)}`)).status).toBe(200);
  });

  it('filters by source, decision, event ID and delivery ID', async () => {
    const eventId = `filter-${Math.random()}`;
    await post(gateway.url, 'shop', shopifyDelivery({ eventId, webhookId: `${eventId}-a` }));
    await post(gateway.url, 'shop', shopifyDelivery({ eventId, webhookId: `${eventId}-b` }));
    const byEvent = await api(`/api/deliveries?eventId=${eventId}&source=shop`);
    expect(byEvent.json.items.map((d: { decision: string }) => d.decision)).toEqual(['duplicate_event', 'accepted']);
    const dup = await api(`/api/deliveries?eventId=${eventId}&decision=duplicate_event`);
    expect(dup.json.items).toMatchObject([{ deliveryId: `${eventId}-b` }]);
    expect((await api(`/api/deliveries?deliveryId=${eventId}-a`)).json.items).toHaveLength(1);
    expect((await api(`/api/deliveries?source=nope`)).json.items).toHaveLength(0);
  });
});

describe('what a delivery made', () => {
  it('counts the tasks of each receipt, and says why an accepted one made none: in the API, the CLI and the dashboard', async () => {
    const eventId = `made-${Math.random()}`;
    const ignored = JSON.stringify({ id: 1, email: 'ignored@example.com', total_price: '10.00' });
    await post(gateway.url, 'shop', shopifyDelivery({ eventId, webhookId: `${eventId}-a` }));
    await post(gateway.url, 'shop', shopifyDelivery({ eventId, webhookId: `${eventId}-b` }));
    await post(gateway.url, 'shop', shopifyDelivery({ eventId: `${eventId}-filtered`, body: ignored }));
    await post(gateway.url, 'shop', shopifyDelivery({ eventId: `${eventId}-topic`, topic: 'carts/create' }));
    const page = (await api('/api/deliveries?limit=4')).json;
    const made = page.items.map((d: any) => [d.eventId, d.decision, d.taskCount, d.skippedReasons]);
    expect(made).toEqual([
      [`${eventId}-topic`, 'accepted', 0, ['topic']],
      [`${eventId}-filtered`, 'accepted', 0, ['filtered']],
      // A duplicate makes no task: its origin's are the ones it is about.
      [eventId, 'duplicate_event', 0, []],
      [eventId, 'accepted', 1, []],
    ]);
    const cli = deliveriesView(page).split('\n');
    expect(cli[0]).toMatch(/^ID +AGE +SOURCE +DECISION +TASKS +EVENT/);
    expect(cli.slice(1, 5).map((line) => / (no task: [a-z-]+|1 task|) +\S*made-/.exec(line)?.[1])).toEqual(['no task: off-topic', 'no task: filtered', '', '1 task']);
    const html = await signedInDashboard(gateway.url)('/ui/deliveries?limit=4');
    expect(html).toContain('<td class="nowrap">no task: filtered</td>');
    expect(html).toContain('<td class="nowrap">no task: off-topic</td>');
    expect(html).toContain('<td class="nowrap">1 task</td>');
  });
});

describe('GET /api/deliveries/{id}', () => {
  it('explains a duplicate_event in words, naming the first delivery and where its task stands, with links', async () => {
    const eventId = `explain-${Math.random()}`;
    const first = await post(gateway.url, 'shop', shopifyDelivery({ eventId, webhookId: 'sub-a' }));
    await post(gateway.url, 'shop', shopifyDelivery({ eventId, webhookId: 'sub-b' }));
    const taskId = first.json.tasks[0].id;
    await setState(gateway.store.db, taskId, 'succeeded');
    await gateway.store.db.execute(sql`update tasks set result_reference = 'CRM-7' where id = ${taskId}`);
    const [second] = (await api(`/api/deliveries?eventId=${eventId}&decision=duplicate_event`)).json.items;
    const view = await api(`/api/deliveries/${second.id}`);
    expect(view.status).toBe(200);
    const firstReceipt = (await api(`/api/deliveries?deliveryId=sub-a&eventId=${eventId}`)).json.items[0];
    expect(view.json.explanation).toMatch(
      new RegExp(
        `^duplicate_event — event ${eventId} first arrived in delivery ${firstReceipt.id} \\(shop delivery ID sub-a\\) at .+; ` +
          `nothing new was created; task ${taskId} for crm succeeded, reference CRM-7$`,
      ),
    );
    expect(view.json.links).toEqual({
      self: `/api/deliveries/${second.id}`,
      matched: `/api/deliveries/${firstReceipt.id}`,
      origin: `/api/deliveries/${firstReceipt.id}`,
      tasks: [`/api/tasks/${taskId}`],
    });
    const original = await api(`/api/deliveries/${firstReceipt.id}`);
    expect(original.json.explanation).toMatch(/^accepted — event .* was new, and this delivery created its tasks; task .* succeeded/);
    expect(original.json.repeats).toMatchObject([{ id: second.id, decision: 'duplicate_event' }]);
    expect(original.json.headers['x-shopify-hmac-sha256']).not.toMatch(/[A-Za-z0-9+/]{20,}/);
  });

  it('explains a sender retry as duplicate_delivery, and answers 404 for an unknown receipt', async () => {
    const eventId = `retry-${Math.random()}`;
    const delivery = shopifyDelivery({ eventId });
    await post(gateway.url, 'shop', delivery);
    await post(gateway.url, 'shop', delivery);
    const [retry] = (await api(`/api/deliveries?eventId=${eventId}&decision=duplicate_delivery`)).json.items;
    expect((await api(`/api/deliveries/${retry.id}`)).json.explanation).toMatch(/^duplicate_delivery — the sender retried/);
    expect((await api('/api/deliveries/d_nope')).status).toBe(404);
  });
});

describe('cursor pagination under concurrent inserts', () => {
  it('pages newest first and oldest first while deliveries arrive, each one exactly once', async () => {
    const marker = `concurrent-${Math.random()}`;
    const send = (i: number) => post(gateway.url, 'shop', shopifyDelivery({ eventId: `${marker}-${i}` }));
    await Promise.all(Array.from({ length: 10 }, (_, i) => send(i)));
    const start = (await pageThrough('limit=500&order=desc')).seen;

    // Page both ways in small pages while 40 more arrive; then follow the ascending cursor to the end.
    let ascending: string[] = [];
    let descending: string[] = [];
    let cursor: string | null = null;
    const arriving = Promise.all(Array.from({ length: 40 }, (_, i) => send(10 + i)));
    const newestFirst = pageThrough('limit=3&order=desc').then((page) => (descending = page.seen));
    for (let round = 0; round < 6; round++) {
      const page = await pageThrough('limit=3&order=asc', cursor);
      ascending = ascending.concat(page.seen);
      cursor = page.cursor;
    }
    await Promise.all([arriving, newestFirst]);
    ascending = ascending.concat((await pageThrough('limit=3&order=asc', cursor)).seen);

    const everything = (await pageThrough('limit=500&order=desc')).seen;
    expect(everything.length).toBe(start.length + 40);
    expect(new Set(ascending).size).toBe(ascending.length);
    expect(ascending.slice().sort()).toEqual(everything.slice().sort());
    // Newest first sees everything that existed when it started, once, and never a row twice.
    expect(new Set(descending).size).toBe(descending.length);
    expect(descending).toEqual(expect.arrayContaining(start));
  });

  // Needs a second session holding a transaction open: a server, not the single-session embedded PGlite.
  if (engine() === 'postgres') it(
    'does not skip a row whose transaction took its sequence number first but committed last',
    async () => {
      const marker = `late-${Math.random()}`;
      const before = (await pageThrough('limit=100&order=asc')).cursor;
      const late = await holdTransaction(
        gateway.database.url!,
        (tx) => tx`insert into deliveries (id, source, delivery_id, event_id, decision, headers, body_sha256, body_bytes)
                   values (${`d_${marker}`}, 'shop', ${marker}, ${marker}, 'accepted', '{}'::jsonb, 'x', 0)`,
      );
      try {
        // Later transactions take higher sequence numbers and commit first.
        for (let i = 0; i < 5; i++) await post(gateway.url, 'shop', shopifyDelivery({ eventId: `${marker}-${i}` }));
        const whileOpen = await pageThrough('limit=2&order=asc', before);
        await late.commit();
        const after = await pageThrough('limit=2&order=asc', whileOpen.cursor);

        const seen = [...whileOpen.seen, ...after.seen];
        expect(seen).toContain(`d_${marker}`);
        expect(new Set(seen).size).toBe(seen.length);
        expect(seen).toHaveLength(6);
        const [held, ...later] = (await late.session<{ seq: string; id: string }[]>`
          select id, seq::text from deliveries where event_id like ${`${marker}%`} order by seq`);
        // The scenario really happened: the held row has the lowest sequence number, yet it committed last.
        expect(held!.id).toBe(`d_${marker}`);
        expect(later).toHaveLength(5);
      } finally {
        await late.end();
      }
    },
  );
});
