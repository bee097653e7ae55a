import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminApi, ADMIN_TOKEN } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { taskIn } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

const FAST = { timeoutMs: 300, backoff: { initialMs: 20, maxMs: 100 } };
let gateway: TestGateway;
let downstream: Downstream;
let refusing: Downstream;
let api: ReturnType<typeof adminApi>;

beforeAll(async () => {
  [downstream, refusing] = await Promise.all([startDownstream(), startDownstream()]);
  gateway = await startTestGateway(
    shopConfig({
      hang: { url: `${downstream.url}/hang`, topics: ['hang'], ...FAST },
      ok: { url: `${downstream.url}/ok`, topics: ['ok'], ...FAST },
      locked: { url: `${refusing.url}/locked`, topics: ['locked'], ...FAST },
    }),
    { adminToken: ADMIN_TOKEN },
  );
  api = adminApi(gateway.url);
  downstream.script('/hang', { otherwise: 'hang' });
  refusing.script('/locked', { steps: [{ status: 401 }] });
});
afterAll(async () => {
  await gateway?.close();
  await Promise.all([downstream?.close(), refusing?.close()]);
});

const deliver = async (topic: string) =>
  (await post(gateway.url, 'shop', shopifyDelivery({ eventId: `${topic}-${Math.random()}`, topic }))).json.tasks[0].id as string;

describe('a task held for a person, end to end', () => {
  it('a hang without key or lookup lands in needs_review; a person resolves it and it succeeds', async () => {
    const id = await deliver('hang');
    await taskIn(gateway.store.db, id, 'needs_review');
    const queue = await api('/api/tasks?state=needs_review,outcome_unknown,failed,awaiting_approval');
    expect(queue.json.items.map((t: { id: string }) => t.id)).toContain(id);
    const resolved = await api(`/api/tasks/${id}/resolve`, { body: { reference: 'eff_1', note: 'the effect is in the downstream log' } });
    expect(resolved.json).toMatchObject({ state: 'succeeded', resultReference: 'eff_1' });
    expect(resolved.json.ledger).toMatchObject([{ kind: 'send', class: 'unknown' }]);
    expect(downstream.effects('/hang')).toHaveLength(1);
  });
});

describe('destinations', () => {
  it('a 401 pauses the destination; resume needs a note, is recorded, and lets its tasks through again', async () => {
    const refused = await deliver('locked');
    await taskIn(gateway.store.db, refused, 'failed');
    const origin = encodeURIComponent(refusing.url);
    const listed = await api('/api/destinations');
    expect(listed.json.items.find((d: { origin: string }) => d.origin === refusing.url)).toMatchObject({
      status: 'paused',
      pausedReason: expect.stringMatching(/^401/),
      actions: ['shop/locked'],
    });
    expect(listed.json.items.find((d: { origin: string }) => d.origin === downstream.url)).toMatchObject({ status: 'open' });

    const waiting = await deliver('locked');
    // Only pending, yet held: the task says what it waits for, and who can end it.
    const held = await api(`/api/tasks/${waiting}`);
    expect(held.json.state).toBe('pending');
    expect(held.json.summary).toContain(`held: ${refusing.url} is paused`);
    expect(held.json.nextDecision).toMatch(/^Nothing is sent to .* while it is paused \(since .*: 401.*\)\. Fix the cause, then resume the destination \(oncehook resume /);
    expect((await api(`/api/destinations/${origin}/resume`, { body: {} })).status).toBe(400);
    expect((await api(`/api/destinations/${origin}/resume`, { body: { note: 'x' }, token: null })).status).toBe(401);
    const resumed = await api(`/api/destinations/${origin}/resume`, { body: { note: 'rotated the CRM credentials' } });
    expect(resumed.status).toBe(200);
    expect(resumed.json.items[0]).toMatchObject({ status: 'open', pausedAt: null });
    await taskIn(gateway.store.db, waiting, 'succeeded');

    const again = await api(`/api/destinations/${origin}/resume`, { body: { note: 'twice' } });
    expect(again.status).toBe(409);
    expect(again.json.error.message).toMatch(/is not paused/);
    expect((await api(`/api/destinations/${encodeURIComponent('http://nowhere.example')}/resume`, { body: { note: 'x' } })).status).toBe(404);
    // Configured, listed as open, never paused: not paused, rather than unknown.
    const neverPaused = await api(`/api/destinations/${encodeURIComponent(downstream.url)}/resume`, { body: { note: 'x' } });
    expect(neverPaused.status).toBe(409);
    expect(neverPaused.json.error.code).toBe('not_paused');

    const retried = await api(`/api/tasks/${refused}/retry`, { body: { note: 'credentials fixed' } });
    expect(retried.status).toBe(200);
    // The retry wakes the forwarder in the same transaction, so the answer may already show it under way.
    expect(['pending', 'in_progress', 'succeeded']).toContain(retried.json.state);
    await taskIn(gateway.store.db, refused, 'succeeded');
  });
});

describe('GET /api/stats', () => {
  it('counts events, duplicates by kind, attempts, confirmed effects and unresolved work with its age', async () => {
    const eventId = `stats-${Math.random()}`;
    const delivery = shopifyDelivery({ eventId, topic: 'ok' });
    await post(gateway.url, 'shop', delivery);
    await post(gateway.url, 'shop', delivery);
    expect((await api('/api/stats', { token: null })).status).toBe(401);
    const stats = (await api('/api/stats')).json;
    expect(stats.events).toBeGreaterThanOrEqual(1);
    expect(stats.decisions.duplicate_delivery).toBeGreaterThanOrEqual(1);
    expect(stats.attempts.unknown).toBeGreaterThanOrEqual(1);
    expect(stats.confirmedEffects).toBeGreaterThanOrEqual(1);
    expect(stats.alertMessages).toEqual({});
    expect(stats.unresolved).toMatchObject({ count: expect.any(Number) });
    expect(stats.tasks.every((s: { state: string; count: number }) => typeof s.state === 'string' && s.count > 0)).toBe(true);
    expect(stats.needsAttention.count).toBe(
      stats.tasks
        .filter((s: { state: string }) => ['needs_review', 'outcome_unknown', 'failed', 'awaiting_approval'].includes(s.state))
        .reduce((n: number, s: { count: number }) => n + s.count, 0),
    );
  });
});

describe('an address with nothing behind it', () => {
  it('says where deliveries, the admin API and the dashboard are', async () => {
    const answer = await fetch(`${gateway.url}/`);
    expect(answer.status).toBe(404);
    expect((await answer.json()).error.message).toMatch(/^no route for GET \/; oncehook serves POST \/in\/\{source\} for deliveries, .*\/ui/);
  });
});

describe('/metrics, /readyz and request IDs', () => {
  it('exposes tasks by state, confirmed effects and unresolved work read from the database', async () => {
    await deliver('ok');
    const text = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(text).toMatch(/^oncehook_tasks\{state="succeeded"\} \d+$/m);
    expect(text).toMatch(/^oncehook_confirmed_effects \d+$/m);
    expect(text).toMatch(/^oncehook_tasks_unresolved \d+$/m);
    expect(text).toMatch(/^oncehook_tasks_unresolved_oldest_seconds [\d.e+-]+$/m);
    expect(text).toMatch(/^oncehook_tasks_needing_attention \d+$/m);
    expect(text).toMatch(/^oncehook_forward_seconds_bucket/m);
    expect(text).toMatch(/^oncehook_ack_seconds_bucket/m);
    // The process's own figures under the names Node.js dashboards look for.
    expect(text).toMatch(/^process_cpu_seconds_total [\d.e+-]+$/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds [\d.e+-]+$/m);
  });

  it('is ready only with the database reachable, every migration applied and no stalled lease', async () => {
    const ready = await fetch(`${gateway.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({
      ok: true,
      database: 'reachable',
      migrations: 'applied',
      leases: 'none stalled',
      stalledLeases: 0,
      ownWorker: 'looking',
      workers: 'alive',
    });
  });

  it('answers every request with an X-Request-Id, keeping one the caller sent', async () => {
    const mine = await fetch(`${gateway.url}/healthz`, { headers: { 'x-request-id': 'trace-123' } });
    expect(mine.headers.get('x-request-id')).toBe('trace-123');
    expect((await api('/api/stats')).headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('keeps the X-Request-Id on refusals, where a sender or an operator needs it most', async () => {
    const refusals = [
      fetch(`${gateway.url}/in/shop`, { method: 'POST', body: '{}', headers: { 'x-request-id': 'unsigned-1' } }),
      fetch(`${gateway.url}/api/stats`, { headers: { 'x-request-id': 'no-token-1' } }),
      fetch(`${gateway.url}/api/tasks/t_nosuchtask`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'x-request-id': 'unknown-1' } }),
    ];
    const answers = await Promise.all(refusals);
    expect(answers.map((a) => a.status)).toEqual([401, 401, 404]);
    expect(answers.map((a) => a.headers.get('x-request-id'))).toEqual(['unsigned-1', 'no-token-1', 'unknown-1']);
    expect(answers[1]!.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });
});
