import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { waitFor } from '../support/forwarding.ts';
import { killHoldingLeases, startInstances, type Instances } from '../support/instances.ts';
import type { GatewayProcess } from '../support/process.ts';

const KEYS = 12;
const VERSIONS = 4;

// An ordered action (`order`, mode sequence) served by two gateways on one PostgreSQL, one killed with -9 while it
// holds requests in flight: the database alone keeps one request per key in flight and each key in its order.
describe('an ordered action on two instances, one killed mid-sequence', () => {
  let rig: Instances;

  beforeAll(async () => {
    rig = await startInstances(
      2,
      (downstream) => {
        // Effects are made at once and answered late, so the kill lands between the two for some of them.
        for (let key = 0; key < KEYS; key++) downstream.script(`/orders/${key}`, { otherwise: { status: 201, delayMs: 150 }, honourKey: true });
        return shopConfig({
          crm: {
            url: `${downstream.url}/orders/{body:/id}`,
            idempotency: 'key',
            timeoutMs: 2000,
            backoff: { initialMs: 20, maxMs: 200 },
            order: { key: '{body:/id}', by: '{body:/updated_at}', mode: 'sequence' },
          },
        });
      },
      { ONCEHOOK_LEASE_GRACE_MS: '300', ONCEHOOK_CONCURRENCY: '8' },
    );
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('never has two requests of one key in flight, and each key gets every version once, in order', async () => {
    const { database, downstream, instances } = rig;
    const sql = postgres(database.url!, { max: 1, onnotice: () => {} });
    try {
      const [victim, survivor] = instances as [GatewayProcess, GatewayProcess];
      // Each version of each key goes to one instance or the other, as a sender's load balancer would send them;
      // one refused by the dead instance is sent again to the other, as the sender would retry it.
      const deliver = async (key: number, version: number) => {
        const updatedAt = new Date(Date.UTC(2026, 11, 7, 12, 0, version)).toISOString();
        const delivery = shopifyDelivery({ eventId: `o-${key}-${version}`, body: JSON.stringify({ id: key, version, updated_at: updatedAt }) });
        const first = (key + version) % 2 === 0 ? victim : survivor;
        const answer = await post(first.url, 'shop', delivery).catch(() => null);
        if (answer?.status === 200) return;
        expect((await post(survivor.url, 'shop', delivery)).status).toBe(200);
      };
      const sending = (async () => {
        for (let version = 1; version <= VERSIONS; version++) {
          await Promise.all(Array.from({ length: KEYS }, (_, key) => deliver(key, version)));
        }
      })();
      await killHoldingLeases(sql, victim);
      await sending;

      await waitFor(async () => {
        const [left] = await sql<{ n: number }[]>`select count(*)::int as n from tasks where state <> 'succeeded'`;
        return left!.n === 0 || undefined;
      }, 60_000);
      const [made] = await sql<{ n: number }[]>`select count(*)::int as n from tasks`;
      expect(made!.n).toBe(KEYS * VERSIONS);
      for (let key = 0; key < KEYS; key++) {
        const effects = downstream.effects(`/orders/${key}`).map((e) => (JSON.parse(e.body.toString()) as { version: number }).version);
        expect(effects, `key ${key}`).toEqual(Array.from({ length: VERSIONS }, (_, i) => i + 1));
        expect(downstream.peakOpen(`/orders/${key}`), `key ${key}`).toBe(1);
      }
      // Keys went out side by side.
      expect(downstream.peakOpen()).toBeGreaterThan(1);
    } finally {
      await sql.end();
    }
  });
});
