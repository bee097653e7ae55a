import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageId } from '../../src/alerts/watcher.ts';
import { ROUND_LOCK } from '../../src/store/atomic/alerts.ts';
import { ADMIN_TOKEN, adminApi } from '../support/admin.ts';
import { ALERT_SIGNING, alertSequences, arrivals, listedMessages, receivedAlerts, severalRounds, startConditionTargets, TEST_ROUND_ARGS, topicAction } from '../support/alert-receiver.ts';
import { post, SHOP_SECRET, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { freshPostgresDatabase, type TestDatabase } from '../support/engine.ts';
import { waitFor } from '../support/forwarding.ts';
import { spawnGateway, type GatewayProcess } from '../support/process.ts';

const WAVES = 5;
/** How pg_locks shows the alert round's advisory lock, a bigint key: its high and low 32 bits. */
const ROUND_LOCK_ROW = { classid: Math.floor(ROUND_LOCK / 2 ** 32), objid: ROUND_LOCK % 2 ** 32 };

// Two gateway processes (role `all`: each receives, forwards and looks at the alerts a few times a second) on one
// PostgreSQL, started together so their rounds fall at the same moments. Conditions open, grow and clear in waves, deliveries
// split across both: each message is made once (one instance a round, under the round's lock) and sent once (one
// claim per task), and each condition's messages are one sequence, 1…n, with no number made twice or skipped.
describe('alerts from two instances on one PostgreSQL', () => {
  let database: TestDatabase;
  let endpoint: Downstream;
  let api: Downstream;
  let refusing: Downstream;
  let instances: GatewayProcess[] = [];
  let root: string;

  beforeAll(async () => {
    [database, endpoint, { api, refusing }] = await Promise.all([freshPostgresDatabase(), startDownstream(), startConditionTargets()]);
    // Answered late, so the two forwarders' claims overlap while messages are in flight.
    endpoint.script('/alerts', { otherwise: { status: 200, delayMs: 300 } });
    root = mkdtempSync(join(tmpdir(), 'oncehook-alerts-two-'));
    const configFile = join(root, 'config.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        alerts: {
          ops: { url: `${endpoint.url}/alerts`, format: 'json', signingSecret: ALERT_SIGNING, on: ['failed', 'destination_paused'], minIntervalSeconds: 1 },
        },
        sources: {
          shop: {
            adapter: 'shopify',
            secrets: [SHOP_SECRET],
            actions: { rejects: topicAction(`${api.url}/rejects`, 'rejects'), refused: topicAction(`${refusing.url}/refused`, 'refused') },
          },
        },
      }),
    );
    instances = await Promise.all(
      [0, 1].map(() =>
        spawnGateway({ args: ['--config', configFile, ...TEST_ROUND_ARGS], env: { DATABASE_URL: database.url, ONCEHOOK_ADMIN_TOKEN: ADMIN_TOKEN } }),
      ),
    );
  });
  afterAll(async () => {
    for (const instance of instances) instance.child.kill('SIGCONT');
    await Promise.all(instances.map((instance) => instance.stop()));
    await Promise.all([endpoint?.close(), api?.close(), refusing?.close()]);
    await database?.drop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('make each message once and send it once, in one sequence per condition', async () => {
    const started = performance.now();
    const db = postgres(database.url!, { max: 1, onnotice: () => {} });
    const [one, two] = instances as [GatewayProcess, GatewayProcess];
    const deliver = async (instance: GatewayProcess, topic: string) => {
      const answer = await post(instance.url, 'shop', shopifyDelivery({ eventId: `${topic}-${Math.random()}`, topic }));
      expect(answer.status).toBe(200);
    };
    const queued = (instance: GatewayProcess) => (instance.output().match(/alert messages queued/g) ?? []).length;
    const failedMessages = async () => (await db<{ n: number }[]>`
      select count(*)::int as n from tasks where source = '_alerts' and event_id = 'failed'`)[0]!.n;
    /**
     * Freezes an instance (SIGSTOP: a long pause, a stalled VM) so the other must do the rounds — never while it holds
     * the round's lock, which would stop the other's rounds too until it is thawed.
     */
    const freeze = async (instance: GatewayProcess) => {
      for (;;) {
        instance.child.kill('SIGSTOP');
        const [held] = await db<{ n: number }[]>`
          select count(*)::int as n from pg_locks
          where locktype = 'advisory' and classid = ${ROUND_LOCK_ROW.classid} and objid = ${ROUND_LOCK_ROW.objid} and objsubid = 1 and granted`;
        if (held!.n === 0) return;
        instance.child.kill('SIGCONT');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    try {
      // Waves: both running (their rounds fall at the same moments, one takes the lock), then each alone while the
      // other is frozen, then both again. Each wave's failures are news told in a message of its own.
      for (let wave = 0; wave < WAVES; wave++) {
        const frozen = wave === 1 ? one : wave === 2 ? two : null;
        const running = frozen === one ? two : frozen === two ? one : null;
        if (frozen) await freeze(frozen);
        const [before, queuedBefore] = [await failedMessages(), running ? queued(running) : 0];
        // Split across both, or all to the one running.
        const into = running ?? (wave % 2 ? two : one);
        await Promise.all([deliver(running ?? one, 'rejects'), deliver(running ?? two, 'rejects')]);
        if (wave === 1) await deliver(into, 'refused');
        if (wave === 3) {
          const resumed = await adminApi(two.url)(`/api/destinations/${encodeURIComponent(refusing.url)}/resume`, { body: { note: 'rotated' } });
          expect(resumed.status).toBe(200);
        }
        expect((await adminApi(into.url)('/api/alerts/ops/test', { body: {} })).status).toBe(202);
        await waitFor(async () => (await failedMessages()) > before, 20_000);
        // The instance left running made the wave's message: it continued a sequence the other began.
        if (running) await waitFor(() => queued(running) > queuedBefore, 10_000);
        if (frozen) frozen.child.kill('SIGCONT');
      }
    } finally {
      for (const instance of instances) instance.child.kill('SIGCONT');
      await db.end();
    }

    // A round after the last wave has told everything: the failures' counts add up to every failed task.
    const admin = adminApi(one.url);
    await waitFor(async () => {
      const told = receivedAlerts(endpoint, '/alerts').filter((r) => r.event.condition === 'failed');
      return told.reduce((n, r) => n + r.event.count, 0) === WAVES * 2 + 1;
    }, 20_000);
    await waitFor(async () => (await listedMessages(admin)).every((m) => m.state === 'succeeded'), 20_000);
    // Rounds more: nothing more is made or sent.
    await severalRounds();

    const made = await listedMessages(admin);
    const received = receivedAlerts(endpoint, '/alerts');
    expect(made.every((m) => m.state === 'succeeded')).toBe(true);
    expect([...arrivals(received)].sort()).toEqual(made.map((m) => [m.id, 1]).sort());

    // Each condition's messages are exactly the IDs of its sequence 1…n: made once each, none skipped.
    const sequences = await alertSequences(admin);
    for (const condition of ['failed', 'destination_paused']) {
      const n = sequences.get(`ops/${condition}`)!;
      const ids = made.filter((m) => m.condition === condition).map((m) => m.id).sort();
      const sequence = Array.from({ length: n }, (_, i) => messageId('ops', condition, i + 1));
      expect(ids).toEqual([...sequence].sort());
      // And they arrived in that order, whichever instance sent each.
      expect(received.filter((r) => r.event.condition === condition).map((r) => r.webhookId)).toEqual(sequence);
    }
    expect(sequences.get('ops/destination_paused')).toBe(2);
    expect(made.filter((m) => m.type === 'alert.test')).toHaveLength(WAVES);

    // Both instances made messages: each continued the sequences the other had begun.
    const rounds = instances.map(queued);
    expect(rounds.every((n) => n > 0)).toBe(true);
    console.log(
      `alerts from two instances: ${made.length} messages (${sequences.get('ops/failed')} failed, 2 paused, ${WAVES} tests); ` +
        `rounds that made messages per instance: ${rounds.join(', ')}; ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  }, 90_000);
});
