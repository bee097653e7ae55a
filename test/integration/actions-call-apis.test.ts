import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { appLasting, createApp } from '../../src/app.ts';
import { createLogger } from '../../src/log.ts';
import { createMetrics } from '../../src/metrics.ts';
import { createAdapter } from '../../adapters/index.ts';
import { ADMIN_TOKEN, adminApi } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { ledger, task, taskIn, waitFor } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

/** Small timeouts and backoff keep the suite fast; every case still runs over real HTTP. */
const FAST = { timeoutMs: 400, backoff: { initialMs: 20, maxMs: 100 } };
const TOKEN = 'crm-secret-token-4f1d2c';
const AUTH = { Authorization: `Bearer ${TOKEN}` };
const CONTACT = '{"email": email, "name": customer.first_name & " " & customer.last_name, "external_id": $taskId, "total": $number(total_price)}';
const ORDER = { id: 1001, email: 'ada@example.com', total_price: '250.00', customer: { first_name: 'Ada', last_name: 'Lovelace' }, line_items: [{ sku: 'A', quantity: 1 }, { sku: 'B', quantity: 3 }] };

let gateway: TestGateway;
let api: Downstream;
let config: object;
const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

beforeAll(async () => {
  api = await startDownstream();
  const to = (path: string, extra: object = {}) => ({ url: `${api.url}${path}`, topics: [path.slice(1)], ...FAST, headers: AUTH, ...extra });
  config = shopConfig({
    shaped: to('/shaped', { method: 'PUT', idempotency: 'key', idempotencyHeader: 'X-Request-Key', transform: CONTACT }),
    retried: to('/retried', { idempotency: 'key', transform: CONTACT }),
    approved: to('/approved', { approval: 'required', transform: CONTACT }),
    broken: to('/broken', { transform: '{"total": $number(total_price) * 2, "email": $uppercase(email)}' }),
    big: { ...to('/big'), topics: ['orders/filtered'], filter: { body: { total_price: { $gte: 100 } } } },
    multi: { ...to('/multi'), topics: ['orders/filtered'], filter: { body: { line_items: { quantity: { $gte: 2 } } } } },
    text: { ...to('/text'), topics: ['orders/filtered'], filter: { body: { total_price: { $gte: '100' } } } },
    either: {
      ...to('/either'),
      topics: ['orders/filtered'],
      filter: { body: { $or: [{ email: { $endsWith: '@vip.example' } }, { tags: { $contains: 'vip' } }] }, headers: { 'x-shop': 'acme' } },
    },
    notpaid: { ...to('/notpaid'), topics: ['orders/filtered'], filter: { body: { $not: { financial_status: 'paid' } }, topic: { $in: ['orders/filtered'] } } },
    searched: to('/searched', {
      lookup: { url: `${api.url}/searched/lookup?external_id={key}`, found: { results: { external_id: { $exist: true } } } },
      maxAttempts: 3,
    }),
  });
  gateway = await startTestGateway(config, { adminToken: ADMIN_TOKEN });
});
afterAll(async () => {
  await gateway?.close();
  await api?.close();
});

const db = () => gateway.store.db;
const admin = () => adminApi(gateway.url);

async function deliver(topic: string, body: object = ORDER, headers: Record<string, string> = {}) {
  const delivery = shopifyDelivery({ eventId: `${topic}-${Math.random()}`, topic, body: JSON.stringify(body) });
  const answer = await post(gateway.url, 'shop', { ...delivery, headers: { ...delivery.headers, ...headers } });
  expect(answer.status).toBe(200);
  expect(answer.json.decision).toBe('accepted');
  return answer.json;
}

describe('an action that calls a real API', () => {
  it('sends the transform\'s JSON by its method, with its headers and the task ID under its idempotencyHeader', async () => {
    const { tasks } = await deliver('shaped');
    const id = tasks[0].id;
    await taskIn(db(), id, 'succeeded');
    const [request] = api.requests('/shaped');
    expect(request!.method).toBe('PUT');
    expect(request!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(request!.headers['x-request-key']).toBe(id);
    expect(request!.headers['idempotency-key']).toBeUndefined();
    expect(request!.headers['oncehook-task-id']).toBe(id);
    expect(request!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request!.body.toString())).toEqual({ email: 'ada@example.com', name: 'Ada Lovelace', external_id: id, total: 250 });
    // The view shows the bytes sent and the request's shape, the header by its name only.
    const view = (await admin()(`/api/tasks/${id}`)).json;
    expect(view.body.text).toBe(request!.body.toString());
    expect(view.bodySha256).toBe(sha256(request!.body));
    expect(view.request).toEqual({ method: 'PUT', url: `${api.url}/shaped`, contentType: 'application/json', headers: ['Authorization'], idempotencyHeader: 'X-Request-Key' });
    expect(JSON.stringify(view)).not.toContain(TOKEN);
  });

  it('sends the same bytes on every retry, computed once', async () => {
    api.script('/retried', { steps: [{ status: 503 }, { status: 429, retryAfter: '0' }] });
    const { tasks } = await deliver('retried');
    await taskIn(db(), tasks[0].id, 'succeeded');
    const bodies = api.requests('/retried').map((r) => r.body.toString());
    expect(bodies).toHaveLength(3);
    expect(new Set(bodies).size).toBe(1);
    expect((await task(db(), tasks[0].id)).bodySha256).toBe(sha256(bodies[0]!));
  });

  it('asks a person to approve exactly the transformed bytes, and sends those', async () => {
    const { tasks } = await deliver('approved');
    const id = tasks[0].id;
    const waiting = (await admin()(`/api/tasks/${id}`)).json;
    expect(waiting.state).toBe('awaiting_approval');
    const shown = waiting.body.text;
    expect(JSON.parse(shown)).toMatchObject({ name: 'Ada Lovelace', external_id: id });
    const approved = await admin()(`/api/tasks/${id}/approve`, { body: { note: 'checked the contact' } });
    expect(approved.status).toBe(200);
    await taskIn(db(), id, 'succeeded');
    expect(api.requests('/approved').map((r) => r.body.toString())).toEqual([shown]);
    const decision = approved.json.operatorActions.find((a: any) => a.kind === 'approve');
    expect(decision.detail.bodySha256).toBe(sha256(shown));
  });
});

describe('a replay of a task its transform shaped', () => {
  it('is shaped again with its own ID, one by one and in bulk, so its body names the replay, not the original', async () => {
    const { tasks } = await deliver('retried');
    const original = tasks[0].id;
    await taskIn(db(), original, 'succeeded');
    const replayed = await admin()(`/api/tasks/${original}/replay`, { body: { note: 'the CRM lost it' } });
    expect(replayed.status).toBe(201);
    const replay = replayed.json.id;
    expect(replay).not.toBe(original);
    await taskIn(db(), replay, 'succeeded');
    const sent = api.requests('/retried').filter((r) => r.headers['idempotency-key'] === replay);
    expect(sent).toHaveLength(1);
    expect(JSON.parse(sent[0]!.body.toString())).toMatchObject({ email: 'ada@example.com', external_id: replay });
    expect(replayed.json.operatorActions[0].detail).toMatchObject({ replayOf: original, shapedAgain: true });

    const bulk = await admin()('/api/tasks/bulk/replay', { body: { state: 'succeeded', action: 'retried', note: 'again, all', dryRun: true } });
    const count = bulk.json.count;
    expect(count).toBeGreaterThan(0);
    const done = await admin()('/api/tasks/bulk/replay', { body: { state: 'succeeded', action: 'retried', note: 'again, all' } });
    expect(done.json.count).toBe(count);
    for (const id of done.json.tasks) {
      await taskIn(db(), id, 'succeeded');
      const body = api.requests('/retried').find((r) => r.headers['idempotency-key'] === id)!.body.toString();
      expect(JSON.parse(body).external_id).toBe(id);
    }
  });
});

describe('a transform that fails', () => {
  it('leaves the task failed with the expression\'s error in its ledger, sends nothing, and a retry computes it again', async () => {
    const { tasks } = await deliver('broken', { ...ORDER, total_price: 'not a number' });
    const id = tasks[0].id;
    const failed = await task(db(), id);
    expect(failed.state).toBe('failed');
    expect(failed.transformError).toMatch(/^the transform failed at character \d+: Unable to cast value to a number/);
    const [row, ...rest] = await ledger(db(), id);
    expect(rest).toEqual([]);
    expect(row).toMatchObject({ kind: 'transform', class: 'transform_failed', error: failed.transformError });
    expect(row!.decision).toMatch(/nothing was sent/);
    // The delivery's own bytes are kept, for the transform to be computed again.
    expect(JSON.parse(Buffer.from(failed.body!).toString()).total_price).toBe('not a number');

    // Retried with the same config: computed again, failing again, nothing changes.
    const again = await admin()(`/api/tasks/${id}/retry`, { body: { note: 'try again' } });
    expect(again.status).toBe(422);
    expect(again.json.error.code).toBe('transform_failed');
    expect((await task(db(), id)).state).toBe('failed');
    // Never sent, so there is nothing to replay.
    const replay = await admin()(`/api/tasks/${id}/replay`, { body: { note: 'again' } });
    expect(replay.status).toBe(409);
    expect(replay.json.error.code).toBe('transform_failed');

    // Retried by a process whose config has the transform fixed: the new body goes, once.
    const fixed = JSON.parse(JSON.stringify(config));
    fixed.sources.shop.actions.broken.transform = '{"total": $type(total_price) = "number" ? total_price : null, "email": $uppercase(email)}';
    const fixedConfig = parseConfig(JSON.stringify(fixed), 'fixed').config;
    const logger = createLogger('silent');
    const metrics = createMetrics();
    const app = createApp({
      config: fixedConfig,
      adapters: new Map(Object.entries(fixedConfig.sources).map(([id, source]) => [id, createAdapter(source)])),
      store: gateway.store,
      logger,
      metrics,
      adminToken: ADMIN_TOKEN,
      lasting: appLasting(gateway.store, logger, metrics, () => fixedConfig),
    });
    expect(api.requests('/broken')).toEqual([]);
    const retried = await app.request(`/api/tasks/${id}/retry`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ note: 'transform fixed' }),
    });
    expect(retried.status).toBe(200);
    await taskIn(db(), id, 'succeeded');
    const sent = api.requests('/broken');
    expect(sent.map((r) => JSON.parse(r.body.toString()))).toEqual([{ total: null, email: 'ADA@EXAMPLE.COM' }]);
    const after = await task(db(), id);
    expect(after.transformError).toBeNull();
    expect(after.bodySha256).toBe(sha256(sent[0]!.body));
  });
});

describe('filters', () => {
  it('make no task for an action that does not match, and the delivery says why, per action', async () => {
    const small = { ...ORDER, total_price: 40, line_items: [{ quantity: 1 }], financial_status: 'paid' };
    const answer = await deliver('orders/filtered', small, { 'x-shop': 'acme' });
    expect(answer.tasks).toEqual([]);
    const view = (await admin()(`/api/deliveries/${answer.receipt}`)).json;
    expect(view.decision).toBe('accepted');
    const why = Object.fromEntries(view.skipped.map((s: any) => [s.action, `${s.reason}: ${s.detail}`]));
    expect(why).toMatchObject({
      big: 'filtered: body.total_price: 40 is not >= 100',
      multi: 'filtered: body.line_items[].quantity: 1 is not >= 2',
      // A number is not compared with a numeric string.
      text: expect.stringMatching(/^filtered: body\.total_price: 40 is not >= "100" \(number vs string\)$/),
      either: expect.stringMatching(/^filtered: body: none of \$or matched/),
      notpaid: expect.stringMatching(/^filtered: body/),
      shaped: 'topic: topic: "orders/filtered" is not one of ["shaped"]',
    });
    expect(view.explanation).toMatch(/no action made a task of it: .*no task for big \(filter: body\.total_price: 40 is not >= 100\)/);
  });

  it('make a task for each action that matches, and only those', async () => {
    const large = { ...ORDER, total_price: 150, email: 'grace@vip.example', line_items: [{ quantity: 1 }, { quantity: 5 }], financial_status: 'pending' };
    const answer = await deliver('orders/filtered', large, { 'x-shop': 'acme' });
    expect(answer.tasks.map((t: any) => t.action).sort()).toEqual(['big', 'either', 'multi', 'notpaid']);
    const view = (await admin()(`/api/deliveries/${answer.receipt}`)).json;
    expect(view.skipped.map((s: any) => s.action)).toContain('text');
    // The headers' filter: another shop's delivery makes no task for `either`.
    const other = await deliver('orders/filtered', large, { 'x-shop': 'globex' });
    expect(other.tasks.map((t: any) => t.action)).not.toContain('either');
  });
});

describe('a lookup that searches', () => {
  it('finds the effect in a 200 answer that matches found, without sending again', async () => {
    api.script('/searched', { steps: ['hang'], lookup: [{ status: 200, json: { results: [{ external_id: 'x', id: 'ct_9' }] } }] });
    const { tasks } = await deliver('searched');
    const done = await taskIn(db(), tasks[0].id, 'succeeded', 'needs_review', 'failed');
    expect(done.state).toBe('succeeded');
    expect(api.requests('/searched').filter((r) => r.method === 'POST')).toHaveLength(1);
    const lookup = api.requests('/searched').find((r) => r.method === 'GET')!;
    // The action's headers go with its lookup when the lookup names none.
    expect(lookup.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect((await ledger(db(), tasks[0].id)).map((a) => a.class)).toEqual(['unknown', 'lookup_found']);
  });

  it('reads an empty list as "not there", and sends again', async () => {
    api.script('/searched', { steps: ['hang'], lookup: [{ status: 200, json: { results: [] } }] });
    const { tasks } = await deliver('searched');
    const done = await taskIn(db(), tasks[0].id, 'succeeded', 'needs_review', 'failed');
    expect(done.state).toBe('succeeded');
    expect(api.requests('/searched').filter((r) => r.method === 'POST' && r.headers['oncehook-task-id'] === tasks[0].id)).toHaveLength(2);
    const classes = (await ledger(db(), tasks[0].id)).map((a) => a.class);
    expect(classes).toEqual(['unknown', 'lookup_absent', 'success']);
    const absent = (await ledger(db(), tasks[0].id))[1]!;
    expect(absent.error).toMatch(/does not match found \(answer\.results: \[\]/);
  });
});

describe('destinations', () => {
  it('list each origin with its use', async () => {
    await waitFor(async () => (await admin()('/api/destinations')).json.items.length > 0);
    const { items } = (await admin()('/api/destinations')).json;
    expect(items.find((d: any) => d.origin === api.url)).toMatchObject({ limit: null, inFlight: expect.any(Number), waiting: expect.any(Number) });
  });
});
