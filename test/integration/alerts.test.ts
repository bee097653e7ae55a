import { sql } from 'drizzle-orm';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminApi, signedInDashboard } from '../support/admin.ts';
import { post, SHOP_SECRET, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { rows, waitFor } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { engine, freshStore, holdTransaction } from '../support/engine.ts';
import { alertRound, type Observed } from '../../src/store/atomic/alerts.ts';

/** A timeout a loaded machine never reaches: a 422 answered late would be an unknown outcome, not a failure. */
const FAST = { timeoutMs: 5000, backoff: { initialMs: 20, maxMs: 100 } };
const SIGNING = `whsec_${Buffer.from('an alert signing secret, 32 byte').toString('base64')}`;

let gateway: TestGateway;
/** Stands in for Slack and for a program reading json alerts. */
let slack: Downstream;
let hooks: Downstream;
/** The actions' downstream: it refuses, fails and pauses as each case needs. */
let api: Downstream;
let refusing: Downstream;

beforeAll(async () => {
  [slack, hooks, api, refusing] = await Promise.all([startDownstream(), startDownstream(), startDownstream(), startDownstream()]);
  api.script('/rejects', { otherwise: { status: 422 } });
  refusing.script('/refused', { otherwise: { status: 401 } });
  // Slack's answer to a webhook that was removed: no retry brings it back.
  slack.script('/removed', { otherwise: { status: 404, json: { error: 'no_service' } } });
  const config = {
    publicUrl: 'https://oncehook.example.com',
    alerts: {
      failures: { url: `${slack.url}/slack`, format: 'slack', on: ['failed'], minIntervalSeconds: 60 },
      ops: { url: `${slack.url}/slack`, format: 'slack', on: ['destination_paused', 'signature_failures'], minIntervalSeconds: 1 },
      program: { url: `${hooks.url}/hooks`, format: 'json', on: ['failed', 'awaiting_approval'], signingSecret: SIGNING, minIntervalSeconds: 2 },
      removed: { url: `${slack.url}/removed`, format: 'slack', on: ['needs_review'] },
    },
    sources: {
      shop: {
        adapter: 'shopify',
        secrets: [SHOP_SECRET],
        actions: {
          rejects: { url: `${api.url}/rejects`, topics: ['rejects'], ...FAST },
          refused: { url: `${refusing.url}/refused`, topics: ['refused'], ...FAST },
          gated: { url: `${api.url}/gated`, topics: ['gated'], approval: 'required', ...FAST },
        },
      },
    },
  };
  gateway = await startTestGateway(config, { adminToken: ADMIN_TOKEN, alertRoundMs: 250, signatureFlushMs: 250 });
});
afterAll(async () => {
  await gateway?.close();
  await Promise.all([slack?.close(), hooks?.close(), api?.close(), refusing?.close()]);
});

const db = () => gateway.store.db;
/** Delivers as a sender does: again after a 503 (a busy machine can answer one), until it is recorded. */
async function deliver(topic: string) {
  const delivery = shopifyDelivery({ eventId: `${topic}-${Math.random()}`, topic });
  for (;;) {
    const answer = await post(gateway.url, 'shop', delivery);
    if (answer.status !== 503) return answer;
  }
}
const texts = () => slack.requests('/slack').map((r) => JSON.parse(r.body.toString()).text as string);

describe('alerts', () => {
  it('tell of 30 failures in one message a minInterval, with the count, keeping the rest for the next', async () => {
    await Promise.all(Array.from({ length: 30 }, () => deliver('rejects')));
    const failed = async () => (await rows<{ n: number }>(db(), sql`select count(*)::int as n from tasks where source = 'shop' and state = 'failed'`))[0]!.n;
    await waitFor(async () => (await failed()) === 30, 20_000);
    const first = await waitFor(() => texts().find((t) => /tasks? failed/.test(t)), 10_000);
    // Rounds go on every quarter of a second; the minInterval (60 s) holds back every later one.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const failedTexts = texts().filter((t) => /tasks? failed/.test(t));
    expect(failedTexts).toEqual([first]);
    const said = Number(/^:rotating_light: oncehook: (\d+) tasks? failed/.exec(first)![1]);
    const [state] = await rows<{ gathered: { count?: number } }>(db(), sql`select gathered from alert_states where alert = 'failures' and condition = 'failed'`);
    expect(said + (state!.gathered.count ?? 0)).toBe(30);
    expect(first).toMatch(/shop\/rejects ×\d+/);
    expect(first).toContain('<https://oncehook.example.com/ui/attention?state=failed|open the dashboard>');
    expect(first).toMatch(/tasks: t_[0-9a-f]{32}/);
  });

  it('sends json events signed with Standard Webhooks headers, verified with its library', async () => {
    await deliver('gated');
    const request = await waitFor(() => hooks.requests('/hooks').find((r) => JSON.parse(r.body.toString()).condition === 'awaiting_approval'));
    const event = new Webhook(SIGNING).verify(request.body.toString(), request.headers) as Record<string, unknown>;
    expect(event).toMatchObject({ type: 'alert.opened', alert: 'program', condition: 'awaiting_approval', count: 1, source: 'shop', action: 'gated' });
    expect(request.headers['idempotency-key']).toBe(request.headers['webhook-id']);
  });

  it('open when a destination is paused and clear when it is resumed', async () => {
    await deliver('refused');
    await waitFor(() => texts().find((t) => /destination_paused/.test(t) && t.includes(refusing.url)), 15_000);
    const resumed = await adminApi(gateway.url)(`/api/destinations/${encodeURIComponent(refusing.url)}/resume`, { body: { note: 'token rotated' } });
    expect(resumed.status).toBe(200);
    await waitFor(() => texts().find((t) => /resolved: destination_paused/.test(t)), 15_000);
  });

  it('name the source whose deliveries fail verification, and which check failed', async () => {
    for (let i = 0; i < 6; i++) {
      const forged = shopifyDelivery({ eventId: `forged-${i}`, secret: 'a rotated secret' });
      expect((await post(gateway.url, 'shop', forged)).status).toBe(401);
    }
    // The counts are written every quarter of a second here (every few in the product); the alert follows within a
    // round. It opens at 5: a write between the fifth and the sixth refusal makes its first message say 5.
    const text = await waitFor(() => texts().find((t) => /signature_failures/.test(t)), 20_000);
    const [, count, signature] = /shop: ([56]) deliveries answered 401 in 5 minutes \((\d) signature\)/.exec(text) ?? [];
    expect(count, text).toBeDefined();
    expect(signature).toBe(count);
  });

  it('list what was sent, and send a test message on demand', async () => {
    const api = adminApi(gateway.url);
    const test = await api('/api/alerts/ops/test', { body: {} });
    expect(test.status).toBe(202);
    await waitFor(() => texts().find((t) => /test alert from "ops"/.test(t)));
    const listed = (await api('/api/alerts')).json;
    expect(listed.alerts.map((a: any) => a.name)).toEqual(['failures', 'ops', 'program', 'removed']);
    expect(JSON.stringify(listed.alerts)).not.toContain('/slack');
    const test2 = listed.items.find((m: any) => m.id === test.json.id);
    expect(test2).toMatchObject({ alert: 'ops', type: 'alert.test' });
    expect((await api('/api/alerts/nope/test', { body: {} })).status).toBe(404);
  });

  it('list a message its endpoint refused as failed, with why: the alert is not lost without a trace', async () => {
    const api = adminApi(gateway.url);
    const { id } = (await api('/api/alerts/removed/test', { body: {} })).json;
    const failed = await waitFor(async () => {
      const message = (await api('/api/alerts?alert=removed')).json.items.find((m: any) => m.id === id);
      return message?.state === 'failed' && message;
    });
    expect(failed).toMatchObject({ alert: 'removed', type: 'alert.test', attempts: 1 });
    expect(failed.lastError).toMatch(/^404 .*no_service/);
  });

  it("are counted apart from the sources' tasks, in /api/stats and on the stats page", async () => {
    const api = adminApi(gateway.url);
    const stats = await waitFor(async () => {
      const read = (await api('/api/stats')).json;
      return (read.alertMessages.succeeded ?? 0) > 0 && read;
    });
    // Every source's task here is refused, failed or waits: none has an effect, whatever the alerts sent.
    expect(stats.confirmedEffects).toBe(0);
    expect(stats.tasks.find((s: { state: string }) => s.state === 'succeeded')).toBeUndefined();
    const page = await signedInDashboard(gateway.url)('/ui/stats');
    expect(page).toContain('<h2>Alert messages by state</h2>');
    expect(page).toMatch(/<h2>Tasks by state<\/h2>(?:(?!<h2>).)*<\/table>/s);
    expect(/<h2>Tasks by state<\/h2>((?:(?!<h2>).)*)/s.exec(page)![1]).not.toContain('succeeded');
  });

  // Two statements, two moments: a task that failed between them was counted in the state but its entry was not
  // taken, so the condition opened with nothing to tell and opened again a round later with the task.
  if (engine() === 'postgres') it("see a round's entries and states as of one moment", async () => {
    const t = await freshStore();
    const task = (id: string, state: string) => sql`insert into tasks (id, source, action, event_id, delivery_id, state, body_sha256)
      values (${id}, 'shop', 'crm', ${id}, ${id}, ${state}, 'x')`;
    await t.store.db.execute(task('t_failed_before', 'failed'));
    await t.store.db.execute(task('t_failed_during', 'pending'));
    const seen: Observed[] = [];
    const round = () => alertRound(t.store.db, (observed) => (seen.push(observed), { messages: [], states: [] }));
    // The entry of the first failure is held locked, so the round waits on it; the second fails meanwhile.
    const during = await holdTransaction(t.database.url!, async (tx) => {
      await tx`select id from task_transitions for update`;
      await tx`update tasks set state = 'failed' where id = 't_failed_during'`;
    });
    try {
      const first = round();
      await waitFor(async () => (await rows<{ n: number }>(t.store.db, sql`select count(*)::int as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock'`))[0]!.n > 0);
      await during.commit();
      await first;
      await round();
      expect(seen.map((o) => [o.entered.map((e) => e.taskId), o.inState.failed])).toEqual([
        [['t_failed_before'], 1],
        [['t_failed_during'], 2],
      ]);
    } finally {
      await during.commit();
      await during.end();
      await t.close();
    }
  });
});
