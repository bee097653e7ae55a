import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminApi } from '../support/admin.ts';
import { ALERT_SIGNING, alertSequences, arrivals, listedMessages, receivedAlerts, severalRounds, TEST_ROUND_ARGS, type ListedMessage } from '../support/alert-receiver.ts';
import { post, SHOP_SECRET, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { freshPostgresDatabase } from '../support/engine.ts';
import { waitFor } from '../support/forwarding.ts';
import { spawnGateway, type GatewayProcess } from '../support/process.ts';

/** Where the gateway stores: its own PostgreSQL database, or `npm start`'s embedded PGlite in a data directory. */
const engines: { name: string; place(root: string): Promise<{ env: Record<string, string | undefined>; drop(): Promise<void> }> }[] = [
  {
    name: 'PostgreSQL',
    async place() {
      const database = await freshPostgresDatabase();
      return { env: { DATABASE_URL: database.url }, drop: () => database.drop() };
    },
  },
  {
    name: 'embedded PGlite',
    async place(root) {
      return { env: { DATABASE_URL: undefined, ONCEHOOK_DATA_DIR: join(root, 'data') }, drop: async () => {} };
    },
  },
];

/**
 * kill -9 while an alert message is in flight: the endpoint has read the request and holds its answer, so the
 * gateway cannot know whether it arrived. What holds, and what is asserted: the message arrives — at least once on
 * the wire, once per webhook-id. The restarted gateway finds the dead one's lease expired (an unknown outcome) and
 * sends the message again under the same `webhook-id` and `Idempotency-Key`, with the same body: a receiver that
 * dedupes on webhook-id, as Standard Webhooks asks, acts on it once (this endpoint honours the key: one effect). A
 * second message is never made: the round that made it committed it with the alert's standing.
 */
// The two engines side by side: most of each is waiting for the lease and the rounds, and each has its own
// endpoint, downstream and store.
describe.concurrent.each(engines)('an alert in flight through a kill -9, on $name', ({ place: makePlace }) => {
  let endpoint: Downstream;
  let api: Downstream;
  let gateway: GatewayProcess | undefined;
  let root: string;
  let place: Awaited<ReturnType<(typeof engines)[number]['place']>>;
  let configFile: string;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'oncehook-alerts-kill-'));
    [endpoint, api, place] = await Promise.all([startDownstream(), startDownstream(), makePlace(root)]);
    api.script('/rejects', { otherwise: { status: 422 } });
    // The first message is read and never answered: the kill lands while the gateway waits. Then it answers, and
    // a repeated key is answered from the effect already made.
    endpoint.script('/alerts', { steps: ['hang'], otherwise: { status: 200 }, honourKey: true });
    configFile = join(root, 'config.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        alerts: { ops: { url: `${endpoint.url}/alerts`, format: 'json', signingSecret: ALERT_SIGNING, on: ['failed'], minIntervalSeconds: 1 } },
        sources: {
          shop: {
            adapter: 'shopify',
            secrets: [SHOP_SECRET],
            actions: { rejects: { url: `${api.url}/rejects`, timeoutMs: 5000, backoff: { initialMs: 20, maxMs: 200 } } },
          },
        },
      }),
    );
  });
  afterAll(async () => {
    await gateway?.stop();
    await Promise.all([endpoint?.close(), api?.close()]);
    await place?.drop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  // A short lease: the restarted gateway takes the dead one's message back 4.3 s after its claim (the alert's
  // timeout and the grace), not 37 s. The kill lands within milliseconds of the request, well inside the 4 s.
  const start = () =>
    spawnGateway({
      args: ['--config', configFile, ...TEST_ROUND_ARGS, '--alert-timeout-ms', '4000'],
      env: { ...place.env, ONCEHOOK_LEASE_GRACE_MS: '300', ONCEHOOK_ADMIN_TOKEN: ADMIN_TOKEN },
    });

  it('arrives, under one webhook-id, and is made once', async () => {
    const started = performance.now();
    gateway = await start();
    const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'kill-alert', topic: 'orders/create' }));
    expect(answer.status).toBe(200);
    await waitFor(() => endpoint.open().some((o) => o.path === '/alerts'), 20_000);
    await gateway.kill();
    const killedAt = performance.now();

    gateway = await start();
    const admin = adminApi(gateway.url);
    let listed: ListedMessage[] = [];
    const [message] = await waitFor(async () => {
      listed = await listedMessages(admin);
      return listed.length === 1 && listed[0]!.state === 'succeeded' && listed;
    }, 40_000).catch((error: Error) => {
      throw new Error(`${error.message}; listed: ${JSON.stringify(listed)}; the restarted gateway said:\n${gateway!.output()}`);
    });
    const deliveredAfter = (performance.now() - killedAt) / 1000;
    // Rounds more: nothing is made or sent again.
    await severalRounds();

    expect(await listedMessages(admin)).toHaveLength(1);
    expect((await alertSequences(admin)).get('ops/failed')).toBe(1);
    const received = receivedAlerts(endpoint, '/alerts');
    // Sent twice on the wire (the kill left the first unanswered), one webhook-id, the same bytes each time.
    expect([...arrivals(received)]).toEqual([[message!.id, 2]]);
    expect(received.every((r) => r.idempotencyKey === message!.id)).toBe(true);
    expect(new Set(received.map((r) => r.body)).size).toBe(1);
    expect(received[0]!.event).toMatchObject({ type: 'alert.opened', condition: 'failed', count: 1 });
    // The receiver acted once: the repeated key was answered from the effect the first made.
    expect(endpoint.effects('/alerts').map((e) => e.key)).toEqual([message!.id]);
    // The run ledger tells it: the dead worker's attempt expired, the second succeeded.
    const view = (await admin(`/api/tasks/${message!.id}`)).json;
    expect(view.ledger.map((a: { class: string }) => a.class)).toEqual(['lease_expired', 'success']);
    console.log(
      `alert kill -9: in flight after ${((killedAt - started) / 1000).toFixed(1)} s; delivered ${deliveredAfter.toFixed(1)} s after the kill`,
    );
  }, 90_000);
});
