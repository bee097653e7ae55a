import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { Forwarder } from '../../src/forward/forwarder.ts';
import { createLogger } from '../../src/log.ts';
import { createMetrics } from '../../src/metrics.ts';
import { taskView as cliTaskView } from '../../src/cli/views.ts';
import { ADMIN_TOKEN, adminApi, signedInDashboard } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { rows, task, taskIn, waitFor } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

/**
 * Tasks about one entity (an action's `order`), through the real ingest and real workers: the gateway records
 * only (role web), so each test fills a backlog out of order first, then starts the workers it needs.
 */
// A timeout far past the downstream's 40 ms: on a busy machine a 2 s one was reached, and the keyed resend that
// follows an unknown outcome (allowed, under the same key) counted as a second request of that version.
const FAST = { idempotency: 'key', timeoutMs: 15_000, backoff: { initialMs: 20, maxMs: 100 } };
const ORDER = { key: '{body:/id}', by: '{body:/updated_at}' };

let gateway: TestGateway;
let api: Downstream;
let config: ReturnType<typeof parseConfig>['config'];
const workers: Forwarder[] = [];

beforeAll(async () => {
  api = await startDownstream();
  const raw = shopConfig({
    seq: { url: `${api.url}/seq/{body:/id}`, topics: ['seq'], order: { ...ORDER, mode: 'sequence' }, ...FAST },
    latest: { url: `${api.url}/latest/{body:/id}`, topics: ['latest'], order: { ...ORDER, mode: 'latest' }, ...FAST },
    approved: { url: `${api.url}/approved/{body:/id}`, topics: ['approved'], approval: 'required', order: { ...ORDER, mode: 'sequence' }, ...FAST },
    // No key and no lookup: a lost answer goes to a person's review, and holds its key there.
    review: { url: `${api.url}/review/{body:/id}`, topics: ['review'], order: { ...ORDER, mode: 'sequence' }, timeoutMs: 200, backoff: FAST.backoff },
  });
  config = parseConfig(JSON.stringify(raw), 'test').config;
  gateway = await startTestGateway(raw, { role: 'web', adminToken: ADMIN_TOKEN });
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop()));
});
afterAll(async () => {
  await gateway?.close();
  await api?.close();
});

const db = () => gateway.store.db;
const admin = () => adminApi(gateway.url);

/** Starts `n` workers on the gateway's store, as many instances' forwarders would claim from one database. */
async function startWorkers(n = 1) {
  for (let i = 0; i < n; i++) {
    const worker = new Forwarder({ config, store: gateway.store, logger: createLogger('silent'), metrics: createMetrics() }, { pollMs: 50 });
    workers.push(worker);
    await worker.start();
  }
}

/** Shopify's updated_at, in the shop's own zone: version `v` is `v` seconds after the first. */
const updatedAt = (v: number) => new Date(Date.UTC(2026, 11, 7, 5, 0, v)).toISOString().replace(/\.\d+Z$/, '-05:00');

async function deliver(topic: string, id: number, version: number): Promise<string> {
  const body = JSON.stringify({ id, version, updated_at: updatedAt(version) });
  const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: `${topic}-${id}-${version}-${Math.random()}`, topic, body }));
  expect(answer.status).toBe(200);
  return answer.json.tasks[0].id as string;
}

/** The versions the downstream received at `path`, in the order it received them. */
const versionsAt = (path: string) => api.requests(path).map((r) => (JSON.parse(r.body.toString()) as { version: number }).version);

const view = async (id: string) => (await admin()(`/api/tasks/${id}`)).json;

describe('mode sequence', () => {
  it('sends versions of one order that arrived out of order in the order of their by, and the view names the holder', async () => {
    const [v3, v1, v2] = [await deliver('seq', 1, 3), await deliver('seq', 1, 1), await deliver('seq', 1, 2)];
    // v1 arrived after v3 but before anything was sent: it goes first, and holds the others.
    const held = await view(v3);
    expect(held.state).toBe('pending');
    expect(held.order).toMatchObject({ key: '1', mode: 'sequence', heldBy: { id: v1, state: 'pending' }, supersededBy: null });
    expect(held.summary).toContain(`held behind ${v1} (pending)`);
    expect((await view(v2)).order.heldBy.id).toBe(v1);
    expect((await view(v1)).order.heldBy).toBeNull();
    // The CLI words the same answer; the dashboard's task page links the holder.
    expect(cliTaskView(held)).toMatch(new RegExp(`held behind +${v1} \\(pending\\)`));
    expect(cliTaskView(held)).toMatch(/order +key 1 \(sequence\), position 2026-12-07T05:00:03-05:00/);
    const page = await signedInDashboard(gateway.url)(`/ui/tasks/${v3}`);
    expect(page).toContain('Held behind');
    expect(page).toContain(`href="/ui/tasks/${v1}"`);

    await startWorkers();
    for (const id of [v1, v2, v3]) await taskIn(db(), id, 'succeeded');
    expect(versionsAt('/seq/1')).toEqual([1, 2, 3]);
  });

  it('keeps each of 20 keys in order while the keys go out in parallel, one in flight per key, with many workers', async () => {
    const keys = Array.from({ length: 20 }, (_, i) => 100 + i);
    for (const key of keys) api.script(`/seq/${key}`, { otherwise: { status: 201, delayMs: 40 } });
    // Interleaved across keys, and each key's versions out of order.
    const arrivals = [4, 2, 1, 3].flatMap((v) => keys.map((key) => [key, v] as const));
    const ids: string[] = [];
    for (let i = 0; i < arrivals.length; i += 10) {
      ids.push(...(await Promise.all(arrivals.slice(i, i + 10).map(([key, v]) => deliver('seq', key, v)))));
    }
    await startWorkers(3);
    await waitFor(async () => {
      const [row] = await rows<{ n: number }>(db(), sql`select count(*)::int as n from tasks where id in ${sql.raw(`('${ids.join("','")}')`)} and state = 'succeeded'`);
      return row!.n === ids.length;
    }, 30_000);
    for (const key of keys) {
      expect(versionsAt(`/seq/${key}`), `key ${key}`).toEqual([1, 2, 3, 4]);
      expect(api.peakOpen(`/seq/${key}`), `key ${key}`).toBe(1);
    }
    expect(api.peakOpen()).toBeGreaterThan(1);
  });

  it('holds an earlier arrival behind a head already sent, and releases the key when a person cancels or resolves its holder', async () => {
    api.script('/review/7', { steps: ['hang', 'hang'] });
    const first = await deliver('review', 7, 5);
    await startWorkers();
    // The first send's answer never comes: no key, no lookup, so it waits for a person, holding its key.
    await taskIn(db(), first, 'needs_review');
    const [early, late] = [await deliver('review', 7, 1), await deliver('review', 7, 9)];
    const waiting = await view(early);
    expect(waiting.order.heldBy).toEqual({ id: first, state: 'needs_review' });
    expect(waiting.nextDecision).toBe(
      `It goes once ${first} is resolved, which is needs_review: settle that one (oncehook explain ${first}); cancelling or resolving it lets this one go.`,
    );
    const list = (await admin()(`/api/tasks?state=pending&action=review`)).json;
    expect(list.items.map((t: { id: string }) => t.id).sort()).toEqual([early, late].sort());

    expect((await admin()(`/api/tasks/${first}/resolve`, { body: { note: 'done by hand', reference: 'crm-7' } })).status).toBe(200);
    // The earlier one goes next: its answer is lost too, so it holds the key in review in its turn.
    await taskIn(db(), early, 'needs_review');
    expect((await task(db(), late)).state).toBe('pending');
    expect((await admin()(`/api/tasks/${early}/cancel`, { body: { note: 'stale' } })).status).toBe(200);
    await taskIn(db(), late, 'succeeded');
    expect(versionsAt('/review/7')).toEqual([5, 1, 9]);
  });

  it("lets the next go when a task fails, and puts a person's retry of it back in its key's order", async () => {
    api.script('/seq/9', { steps: [{ status: 422 }, { status: 201, delayMs: 1_000 }] });
    const [v1, v2] = [await deliver('seq', 9, 1), await deliver('seq', 9, 2)];
    await startWorkers();
    await taskIn(db(), v1, 'failed');
    // v2 goes once v1 failed; the retry waits behind it while its answer is on its way.
    await waitFor(() => api.requests('/seq/9').length === 2);
    expect((await admin()(`/api/tasks/${v1}/retry`, { body: { note: 'fixed the CRM' } })).status).toBe(200);
    const retried = await view(v1);
    expect(retried.state).toBe('pending');
    expect(retried.order.heldBy).toEqual({ id: v2, state: 'in_progress' });
    for (const id of [v1, v2]) await taskIn(db(), id, 'succeeded');
    expect(versionsAt('/seq/9')).toEqual([1, 2, 1]);
  });

  it('puts a bulk retry of failed tasks of several keys back in their keys\' order', async () => {
    const keys = [21, 22, 23];
    for (const key of keys) api.script(`/seq/${key}`, { steps: [{ status: 422 }, { status: 201, delayMs: 1_000 }] });
    const firsts = await Promise.all(keys.map((key) => deliver('seq', key, 1)));
    const seconds = await Promise.all(keys.map((key) => deliver('seq', key, 2)));
    await startWorkers();
    for (const id of firsts) await taskIn(db(), id, 'failed');
    await waitFor(() => keys.every((key) => api.requests(`/seq/${key}`).length === 2));
    const retried = await admin()('/api/tasks/bulk/retry', { body: { action: 'seq', state: 'failed', note: 'the CRM is fixed' } });
    expect(new Set(retried.json.tasks)).toEqual(new Set(firsts));
    for (const [i, id] of firsts.entries()) expect((await view(id)).order.heldBy).toEqual({ id: seconds[i], state: 'in_progress' });
    for (const id of [...firsts, ...seconds]) await taskIn(db(), id, 'succeeded');
    for (const key of keys) expect(versionsAt(`/seq/${key}`), `key ${key}`).toEqual([1, 2, 1]);
  });

  it('keeps an approved task held behind an earlier one that waits for its approval', async () => {
    const [v2, v1] = [await deliver('approved', 4, 2), await deliver('approved', 4, 1)];
    await startWorkers();
    const approve = (id: string) => admin()(`/api/tasks/${id}/approve`, { body: { note: 'checked' } });
    expect((await approve(v2)).status).toBe(200);
    const held = await view(v2);
    expect(held.state).toBe('pending');
    expect(held.order.heldBy).toEqual({ id: v1, state: 'awaiting_approval' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(api.requests('/approved/4')).toHaveLength(0);
    expect((await approve(v1)).status).toBe(200);
    for (const id of [v1, v2]) await taskIn(db(), id, 'succeeded');
    expect(versionsAt('/approved/4')).toEqual([1, 2]);
  });

  it("fails a task whose delivery lacks the order's position, sending nothing, and says what to fix", async () => {
    const body = JSON.stringify({ id: 8, version: 1 });
    const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: `seq-8-${Math.random()}`, topic: 'seq', body }));
    const id = answer.json.tasks[0].id as string;
    const failed = await taskIn(db(), id, 'failed');
    expect(failed.lastError).toBe('nothing was sent: order.by needs {body:/updated_at}, which this delivery does not have');
    expect((await view(id)).nextDecision).toContain("Fix the action's order in the config, restart, then retry");
  });
});

describe('mode latest', () => {
  it('sends only the newest of versions that arrived together, and ends the others superseded, naming it', async () => {
    const [v2, v3, v1] = [await deliver('latest', 2, 2), await deliver('latest', 2, 3), await deliver('latest', 2, 1)];
    for (const old of [v1, v2]) {
      const superseded = await taskIn(db(), old, 'superseded');
      expect(superseded.supersededBy).toBe(v3);
      expect(superseded.attempts).toBe(0);
    }
    const explained = await view(v1);
    expect(explained.summary).toContain(`superseded by ${v3}, a newer task of 2: nothing was sent`);
    expect(explained.nextDecision).toBeNull();
    expect(explained.allowedActions).toEqual([]);
    await startWorkers();
    await taskIn(db(), v3, 'succeeded');

    // Not newer than one already sent: superseded on arrival. Newer: sent.
    const stale = await deliver('latest', 2, 0);
    expect((await taskIn(db(), stale, 'superseded')).supersededBy).toBe(v3);
    const newer = await deliver('latest', 2, 4);
    await taskIn(db(), newer, 'succeeded');
    expect(versionsAt('/latest/2')).toEqual([3, 4]);

    const listed = (await admin()('/api/tasks?state=superseded&action=latest')).json;
    expect(listed.items.map((t: { id: string }) => t.id).sort()).toEqual([v1, v2, stale].sort());
    const stats = (await admin()('/api/stats')).json;
    expect(stats.tasks.find((s: { state: string }) => s.state === 'superseded')?.count).toBeGreaterThanOrEqual(3);
  });

  it('never supersedes a task already sent: one in flight is followed by only the newest that arrived meanwhile', async () => {
    api.script('/latest/3', { steps: [{ status: 201, delayMs: 400 }] });
    const sent = await deliver('latest', 3, 1);
    await startWorkers();
    await waitFor(() => api.requests('/latest/3').length === 1);
    const [v3, v2] = [await deliver('latest', 3, 3), await deliver('latest', 3, 2)];
    expect((await taskIn(db(), v2, 'superseded')).supersededBy).toBe(v3);
    expect((await view(v3)).order.heldBy).toEqual({ id: sent, state: 'in_progress' });
    await taskIn(db(), v3, 'succeeded');
    expect((await task(db(), sent)).state).toBe('succeeded');
    expect(versionsAt('/latest/3')).toEqual([1, 3]);
  });
});
