import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageId } from '../../src/alerts/watcher.ts';
import { ADMIN_TOKEN, adminApi } from '../support/admin.ts';
import { ALERT_SIGNING, arrivals, listedMessages, receivedAlerts, severalRounds, startConditionTargets, TEST_ROUND_ARGS, topicAction, type ListedMessage } from '../support/alert-receiver.ts';
import { post, SHOP_SECRET, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { waitFor } from '../support/forwarding.ts';
import { spawnGateway, type GatewayProcess } from '../support/process.ts';
import { startProxy, type FaultyProxy } from '../support/tcp-proxy.ts';

/**
 * How long the alert endpoint refuses connections. The issue asks for a minute: `npm run test:alerts-outage` runs
 * that; `npm test` runs 5 s, which puts the messages through the same refused attempts and backoff, only fewer
 * of them (three or four each, and at least two: the outage lasts until then), and keeps the whole suite within
 * its few minutes. The longer the outage, the longer the backoff's waits, and the longer the catch-up after it.
 */
const OUTAGE_MS = Number(process.env.ONCEHOOK_TEST_ALERT_OUTAGE_S ?? 5) * 1000;
/** The alert route's backoff is capped at five minutes; the messages made in a minute's outage wait at most ~2. */
const CATCH_UP_MS = 180_000;

const timeline: string[] = [];
const started = performance.now();
const mark = (what: string) => timeline.push(`${((performance.now() - started) / 1000).toFixed(1)} s ${what}`);

// The alert endpoint down (connection refused) while conditions open, then up on the same port: every message made
// arrives once, and none is lost. The gateway is `npm start`'s default, embedded PGlite; its rounds come a few times
// a second (the product's every 5 s would only delay each message's making), its messages' retries are the product's.
describe('the alert endpoint down, then up again', () => {
  let endpoint: Downstream;
  let api: Downstream;
  let refusing: Downstream;
  /** The endpoint's only way in: closed (connections refused) for the outage, reopened on the same port after. */
  let door: FaultyProxy;
  let gateway: GatewayProcess;
  let root: string;

  beforeAll(async () => {
    [endpoint, { api, refusing }] = await Promise.all([startDownstream(), startConditionTargets()]);
    door = await startProxy('127.0.0.1', Number(new URL(endpoint.url).port));
    await door.refuse();
    mark('alert endpoint refuses connections');
    root = mkdtempSync(join(tmpdir(), 'oncehook-alerts-outage-'));
    const configFile = join(root, 'config.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        alerts: {
          ops: {
            url: `http://127.0.0.1:${door.port}/alerts`,
            format: 'json',
            signingSecret: ALERT_SIGNING,
            on: ['failed', 'destination_paused'],
            minIntervalSeconds: 1,
          },
        },
        sources: {
          shop: {
            adapter: 'shopify',
            secrets: [SHOP_SECRET],
            actions: {
              rejects: topicAction(`${api.url}/rejects`, 'rejects'),
              ok: topicAction(`${api.url}/ok`, 'ok'),
              refused: topicAction(`${refusing.url}/refused`, 'refused'),
            },
          },
        },
      }),
    );
    gateway = await spawnGateway({
      args: ['--config', configFile, ...TEST_ROUND_ARGS],
      env: { DATABASE_URL: undefined, ONCEHOOK_DATA_DIR: join(root, 'data'), ONCEHOOK_ADMIN_TOKEN: ADMIN_TOKEN },
    });
    mark('gateway listening');
  });
  afterAll(async () => {
    await gateway?.stop();
    await Promise.all([door?.close(), endpoint?.close(), api?.close(), refusing?.close()]);
    if (root) rmSync(root, { recursive: true, force: true });
    console.log(`alerts outage (${OUTAGE_MS / 1000} s):\n  ${timeline.join('\n  ')}`);
  });

  const deliver = async (topic: string) => {
    const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: `${topic}-${Math.random()}`, topic }));
    expect(answer.status).toBe(200);
  };
  const byType = (messages: ListedMessage[]) => messages.map((m) => `${m.condition} ${m.type}`).sort();
  const kinds = (messages: ListedMessage[], ...wanted: string[]) => wanted.every((kind) => byType(messages).includes(kind));

  it('every message made while it refused arrives once when it is back', async () => {
    const admin = adminApi(gateway.url);
    const refusedAt = performance.now();

    // Conditions open while the endpoint is down: tasks fail, a destination is paused, a person asks for a test.
    await Promise.all([deliver('rejects'), deliver('rejects'), deliver('rejects'), deliver('refused')]);
    expect((await admin('/api/alerts/ops/test', { body: {} })).status).toBe(202);
    // Forwarding goes on: an ordinary task is delivered while the alerts wait.
    await deliver('ok');
    await waitFor(() => api.effects('/ok').length === 1);
    // A batch of failures may be told in one message or two, as the rounds fall, so kinds are counted, not listed.
    let messages = await waitFor(async () => {
      const listed = await listedMessages(admin);
      return kinds(listed, 'destination_paused alert.opened', 'failed alert.opened', 'test alert.test') && listed;
    }, 20_000);
    mark(`${messages.length} messages made: ${byType(messages).join(', ')}`);

    // More while it is still down: more failures (news, after minIntervalSeconds) and the destination resumed.
    const told = messages.filter((m) => m.condition === 'failed').length;
    await Promise.all([deliver('rejects'), deliver('rejects')]);
    expect((await admin(`/api/destinations/${encodeURIComponent(refusing.url)}/resume`, { body: { note: 'rotated' } })).status).toBe(200);
    messages = await waitFor(async () => {
      const listed = await listedMessages(admin);
      const failed = listed.filter((m) => m.condition === 'failed').length;
      return kinds(listed, 'destination_paused alert.resolved') && failed > told && listed;
    }, 20_000);
    mark(`${messages.length} messages made: ${byType(messages).join(', ')}`);

    await new Promise((resolve) => setTimeout(resolve, Math.max(0, OUTAGE_MS - (performance.now() - refusedAt))));
    // Down all along: nothing arrived, and nothing was given up. Each condition's first message was tried and refused
    // more than once; its later ones wait behind it, untried, to go out in their order. (On a slow machine the last
    // condition's first message may be younger than that: the outage then lasts until it is refused twice.)
    messages = await waitFor(async () => {
      const listed = await listedMessages(admin);
      const heads = ['failed', 'destination_paused', 'test'].map((c) => listed.filter((m) => m.condition === c && m.attempts > 0));
      return heads.every((tried) => tried.length === 1 && tried[0]!.attempts >= 2 && /not sent: .*ECONNREFUSED/.test(tried[0]!.lastError ?? '')) && listed;
    }, 20_000);
    expect(endpoint.requests()).toEqual([]);
    for (const m of messages) expect(m.state, `${m.condition} ${m.type}: ${m.lastError}`).toMatch(/^(pending|in_progress)$/);
    expect(messages.filter((m) => m.attempts === 0)).toHaveLength(messages.length - 3);
    mark(`endpoint back after ${((performance.now() - refusedAt) / 1000).toFixed(1)} s; attempts: ${messages.map((m) => m.attempts).join(', ')}`);
    const backAt = performance.now();
    await door.restore();

    await waitFor(async () => (await listedMessages(admin)).every((m) => m.state === 'succeeded'), CATCH_UP_MS);
    mark(`all delivered ${((performance.now() - backAt) / 1000).toFixed(1)} s after the endpoint was back`);
    // Rounds more: nothing arrives again, and nothing new is made.
    await severalRounds();

    const received = receivedAlerts(endpoint, '/alerts');
    const made = await listedMessages(admin);
    mark(`arrived in this order: ${received.map((r) => `${r.event.condition} ${r.event.type}`).join(', ')}`);
    // Each message exactly once, under its own ID as both webhook-id and Idempotency-Key.
    expect([...arrivals(received)].sort()).toEqual(made.map((m) => [m.id, 1]).sort());
    for (const r of received) expect(r.idempotencyKey).toBe(r.webhookId);
    const said = new Map(received.map((r) => [r.webhookId, `${r.event.condition} ${r.event.type}`]));
    for (const m of made) expect(said.get(m.id)).toBe(`${m.condition} ${m.type}`);
    // Each condition's messages arrived in their sequence: the last word on the paused destination is "resolved".
    for (const condition of ['failed', 'destination_paused']) {
      const inOrder = made.filter((m) => m.condition === condition).map((_, i) => messageId('ops', condition, i + 1));
      expect(received.filter((r) => r.event.condition === condition).map((r) => r.webhookId)).toEqual(inOrder);
    }
    // Every failure was told (five rejected, one refused), in messages whose counts add up.
    const failedCounts = received.filter((r) => r.event.condition === 'failed').map((r) => r.event.count);
    expect(failedCounts.reduce((a, b) => a + b, 0)).toBe(6);
  }, OUTAGE_MS + CATCH_UP_MS + 60_000);
});
