import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminApi } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { ledger, rows, task, taskIn } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { shopifyOrder } from '../support/shopify-order.ts';

const FAST = { timeoutMs: 400, backoff: { initialMs: 20, maxMs: 100 } };
const CUSTOMER = 7_193_382_060_343;

let gateway: TestGateway;
let api: Downstream;

const actions = () => ({
  contact: {
    url: `${api.url}/crm/contacts/{body:/customer/id}`,
    method: 'PATCH',
    topics: ['contact'],
    transform: '{"note": "order " & name, "order_id": $string(id)}',
    ...FAST,
  },
  approved: { url: `${api.url}/crm/contacts/{body:/customer/id}`, method: 'PATCH', topics: ['approved'], approval: 'required', ...FAST },
  encoded: { url: `${api.url}/crm/notes/{body:/note}?tag={body:/tag}&by={header:x-shop}&order={sent:/id}`, topics: ['encoded'], ...FAST },
  searched: {
    url: `${api.url}/crm/tasks`,
    topics: ['searched'],
    lookup: { url: `${api.url}/crm/tasks/lookup?external_id={body:/id}&task={key}`, found: { total: { $gt: 0 } }, referencePointer: '/results/0/id' },
    // The send's answer is lost: its outcome is reconciled by the lookup.
    ...FAST,
    timeoutMs: 200,
    maxAttempts: 3,
  },
});

beforeAll(async () => {
  api = await startDownstream();
  gateway = await startTestGateway(shopConfig(actions()), { adminToken: ADMIN_TOKEN });
});
afterAll(async () => {
  await gateway?.close();
  await api?.close();
});

const db = () => gateway.store.db;

async function deliver(topic: string, body: object, headers: Record<string, string> = {}) {
  const delivery = shopifyDelivery({ eventId: `${topic}-${Math.random()}`, topic, body: JSON.stringify(body) });
  const answer = await post(gateway.url, 'shop', { ...delivery, headers: { ...delivery.headers, ...headers } });
  expect(answer.status).toBe(200);
  expect(answer.json.decision).toBe('accepted');
  return answer.json.tasks[0].id as string;
}

describe('a url that names the delivery', () => {
  it('goes to the record the delivery names, computed once and shown in the task view', async () => {
    const id = await deliver('contact', shopifyOrder());
    await taskIn(db(), id, 'succeeded');
    const [request] = api.requests(`/crm/contacts/${CUSTOMER}`);
    expect(request!.method).toBe('PATCH');
    expect(JSON.parse(request!.body.toString())).toEqual({ note: 'order #1001', order_id: '5842318082359' });
    expect((await task(db(), id)).requestUrl).toBe(`${api.url}/crm/contacts/${CUSTOMER}`);
    const view = (await adminApi(gateway.url)(`/api/tasks/${id}`)).json;
    expect(view.request.url).toBe(`${api.url}/crm/contacts/${CUSTOMER}`);
    expect(view).not.toHaveProperty('frozenUrls');
  });

  it('percent-encodes each value as one path segment or query value', async () => {
    const id = await deliver('encoded', { id: 9, note: 'a/b?c d#e', tag: 'x&y=z' }, { 'x-shop': 'acme shop' });
    await taskIn(db(), id, 'succeeded');
    const [request] = api.requests('/crm/notes/a%2Fb%3Fc%20d%23e');
    expect(request!.target).toBe('/crm/notes/a%2Fb%3Fc%20d%23e?tag=x%26y%3Dz&by=acme%20shop&order=9');
    const view = (await adminApi(gateway.url)(`/api/tasks/${id}`)).json;
    expect(view.request.url).toBe(`${api.url}/crm/notes/a%2Fb%3Fc%20d%23e?tag=x%26y%3Dz&by=acme%20shop&order=9`);
  });

  it('fails the task with the reason when the delivery lacks a part, and sends nothing', async () => {
    const before = api.requests().length;
    const id = await deliver('contact', shopifyOrder({ customer: null }));
    const failed = await taskIn(db(), id, 'failed');
    expect(failed.lastError).toBe("nothing was sent: the url's {body:/customer/id} is missing: the delivery's body has nothing there");
    expect(failed.requestUrl).toBeNull();
    const [entry] = await ledger(db(), id);
    expect(entry).toMatchObject({ kind: 'transform', error: "the url's {body:/customer/id} is missing: the delivery's body has nothing there" });
    expect(entry!.decision).toMatch(/^failed: the url could not be made of this delivery, and nothing was sent/);
    const view = (await adminApi(gateway.url)(`/api/tasks/${id}`)).json;
    expect(view.nextDecision).toContain("Fix the action's url in the config");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(api.requests().length).toBe(before);
  });

  it('asks a search lookup by the delivery\'s own ID, and keeps the answer\'s ID as the reference', async () => {
    api.script('/crm/tasks', { steps: ['hang'], lookup: [{ status: 200, json: { total: 1, results: [{ id: 'crm-task-77' }] } }] });
    const id = await deliver('searched', { id: 1001 });
    const done = await taskIn(db(), id, 'succeeded');
    expect(done.resultReference).toBe('crm-task-77');
    const lookup = api.requests('/crm/tasks').find((r) => r.method === 'GET')!;
    expect(lookup.target).toBe(`/crm/tasks/lookup?external_id=1001&task=${id}`);
    const view = (await adminApi(gateway.url)(`/api/tasks/${id}`)).json;
    expect(view.request.lookupUrl).toBe(`${api.url}/crm/tasks/lookup?external_id=1001&task=${id}`);
  });
});

describe('a frozen url', () => {
  it('is the one approved and replayed: read from the task, never computed again', async () => {
    const id = await deliver('approved', shopifyOrder());
    await taskIn(db(), id, 'awaiting_approval');
    // Were the URL computed again from the delivery, this change of the stored one would go unseen.
    await rows(db(), sql`update tasks set request_url = ${`${api.url}/crm/contacts/frozen-1`} where id = ${id}`);
    const admin = adminApi(gateway.url);
    expect((await admin(`/api/tasks/${id}`)).json.request.url).toBe(`${api.url}/crm/contacts/frozen-1`);
    expect((await admin(`/api/tasks/${id}/approve`, { body: { note: 'checked' } })).status).toBe(200);
    await taskIn(db(), id, 'succeeded');
    const replayed = await admin(`/api/tasks/${id}/replay`, { body: { note: 'again' } });
    expect(replayed.status).toBe(201);
    await taskIn(db(), replayed.json.id, 'succeeded');
    expect(api.requests('/crm/contacts/frozen-1').map((r) => r.headers['idempotency-key'])).toEqual([id, replayed.json.id]);
  });

  it('is not made up for a task made before its action\'s url named the delivery: nothing is sent, and it fails saying why', async () => {
    const id = await deliver('approved', shopifyOrder());
    await taskIn(db(), id, 'awaiting_approval');
    // As a task recorded before the url was a template holds it: no URL of its own.
    await rows(db(), sql`update tasks set request_url = null where id = ${id}`);
    const before = api.requests().length;
    expect((await adminApi(gateway.url)(`/api/tasks/${id}/approve`, { body: { note: 'checked' } })).status).toBe(200);
    const failed = await taskIn(db(), id, 'failed');
    expect(failed.lastError).toBe("not sent: the task was made before its action's url named the delivery, so it has no URL of its own");
    expect(api.requests().length).toBe(before);
  });
});
