import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminApi } from '../support/admin.ts';
import { post, SHOP_SECRET, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { ledger, taskIn } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { section } from '../support/markdown.ts';
import { shopifyOrder } from '../support/shopify-order.ts';
import { startTokenEndpoint, type TokenEndpoint } from '../support/token-endpoint.ts';

/** The config of actions.md's worked example, as the page writes it. */
const written = (() => {
  const page = readFileSync(new URL('../../docs/actions.md', import.meta.url), 'utf8');
  const text = section(page, 'A worked example: a Shopify order becomes a CRM task');
  return /```json\n([\s\S]*?)\n```/.exec(text)![1]!;
})();

let gateway: TestGateway;
let crm: Downstream;
let login: TokenEndpoint;

beforeAll(async () => {
  [crm, login] = await Promise.all([startDownstream(), startTokenEndpoint()]);
  Object.assign(process.env, { SHOPIFY_API_SECRET: SHOP_SECRET, CRM_CLIENT_ID: 'oncehook', CRM_CLIENT_SECRET: 'crm-client-secret-51c0' });
  const config = JSON.parse(written.replaceAll('https://api.crm.example', crm.url).replaceAll('https://login.crm.example', login.url));
  // Only the waits are cut, so that a timeout and the reconciling lookup after it take a moment, not ten seconds.
  Object.assign(config.sources.shop.actions['crm-follow-up'], { timeoutMs: 300, backoff: { initialMs: 20, maxMs: 100 } });
  gateway = await startTestGateway(config, { adminToken: ADMIN_TOKEN });
}, 30_000);
afterAll(async () => {
  await gateway?.close();
  await Promise.all([crm?.close(), login?.close()]);
});

async function order(overrides: Record<string, unknown>) {
  const body = JSON.stringify(shopifyOrder(overrides));
  const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: `evt-${Math.random()}`, topic: 'orders/create', body }));
  expect(answer.status).toBe(200);
  return answer.json;
}

describe("actions.md's worked example, as written", () => {
  it('adds a follow-up task on the customer\'s record with a token, and a lost answer is settled by the search, not a second PATCH', async () => {
    const contact = '/contacts/7193382060343';
    crm.script(contact, { steps: ['hang'] });
    crm.script('/tasks', { steps: [{ status: 200, json: { total: 1, results: [{ id: 'crm-task-88', order_id: '5842318082359' }] } }] });
    const answer = await order({});
    const id = answer.tasks[0].id;
    const done = await taskIn(gateway.store.db, id, 'succeeded');
    expect(done.resultReference).toBe('crm-task-88');
    const [patch, ...again] = crm.requests(contact);
    expect(again).toEqual([]);
    expect(patch!.method).toBe('PATCH');
    expect(JSON.parse(patch!.body.toString())).toEqual({ add_task: { title: 'Call about order #1001', order_id: '5842318082359', amount: '250.00' } });
    const [search] = crm.requests('/tasks');
    expect(search!.target).toBe('/tasks?order_id=5842318082359');
    // One token for both, unless a busy machine let a token request pass the 300 ms this test allows.
    const token = login.issued().at(-1);
    expect([patch, search].map((r) => r!.headers.authorization)).toEqual([`Bearer ${token}`, `Bearer ${token}`]);
    expect(login.requests()[0]).toMatchObject({ via: 'basic', clientId: 'oncehook', form: { grant_type: 'client_credentials', scope: 'tasks.write' } });
    expect((await ledger(gateway.store.db, id)).map((e) => e.class)).toEqual(['unknown', 'lookup_found']);
    const view = (await adminApi(gateway.url)(`/api/tasks/${id}`)).json;
    expect(view.request).toMatchObject({ method: 'PATCH', url: `${crm.url}${contact}`, lookupUrl: `${crm.url}/tasks?order_id=5842318082359` });
  });

  it('keeps the CRM\'s ID from a 2xx answer as the reference', async () => {
    crm.script('/contacts/42', { steps: [{ status: 200, json: { task: { id: 'crm-task-90' } } }] });
    const answer = await order({ id: 1002, name: '#1002', customer: { id: 42 } });
    expect((await taskIn(gateway.store.db, answer.tasks[0].id, 'succeeded')).resultReference).toBe('crm-task-90');
  });

  it('makes no task of an order of 99.99, and says why', async () => {
    const answer = await order({ id: 1003, total_price: '99.99' });
    expect(answer.tasks).toEqual([]);
    const delivery = (await adminApi(gateway.url)(`/api/deliveries/${answer.receipt}`)).json;
    expect(delivery.skipped).toEqual([
      { action: 'crm-follow-up', reason: 'filtered', detail: expect.stringContaining('total_price') },
    ]);
  });

  it('fails the task of an order without a customer, naming the part, and sends nothing', async () => {
    const before = crm.requests().length;
    const answer = await order({ id: 1004, customer: undefined });
    const failed = await taskIn(gateway.store.db, answer.tasks[0].id, 'failed');
    expect(failed.lastError).toBe("nothing was sent: the url's {body:/customer/id} is missing: the delivery's body has nothing there");
    expect(crm.requests().length).toBe(before);
  });
});
