import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminApi } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { engine } from '../support/engine.ts';
import { rows, taskIn, waitFor } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

let downstream: Downstream;
let gateway: TestGateway;
/** What the next reload reads. */
let next: object;
const quick = { idempotency: 'key', maxAttempts: 50, backoff: { initialMs: 200, maxMs: 400 } };

beforeAll(async () => {
  downstream = await startDownstream();
  // erp refuses connections at first: its task stays pending between attempts.
  next = shopConfig({ crm: { url: `${downstream.url}/crm`, ...quick }, erp: { url: 'http://127.0.0.1:9/erp', ...quick } });
  gateway = await startTestGateway(next, { adminToken: ADMIN_TOKEN, reloadConfig: () => next });
});
afterAll(async () => {
  await gateway?.close();
  await downstream?.close();
});

describe('a reload', () => {
  it("holds a removed action's unsent task for a person, says why, and sends it once the action is back", async () => {
    const api = adminApi(gateway.url);
    const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'reload-held' }));
    const erp = answer.json.tasks.find((t: { action: string }) => t.action === 'erp').id as string;
    await waitFor(async () => (await taskIn(gateway.store.db, erp, 'pending')).attempts >= 1);

    next = shopConfig({ crm: { url: `${downstream.url}/crm`, ...quick } });
    const removed = await api('/api/config/reload', { body: {} });
    expect(removed.json).toMatchObject({ reloaded: true });
    expect((await api('/api/config')).json).toEqual({ configVersion: removed.json.configVersion, reloadable: true });
    // The replaced forwarder may have claimed the task again just before the reload (its backoff is 200-400 ms); that
    // attempt ends as attempts do, and the task is back in pending, where no forwarder of the new config takes it.
    await taskIn(gateway.store.db, erp, 'pending');
    const held = await api(`/api/tasks/${erp}`);
    expect(held.json.summary).toMatch(/held: its action is not in the running config/);
    expect(held.json.nextDecision).toMatch(/^Held: the running config has no action erp on shop/);
    // Well past its backoff: no worker takes it.
    const attempts = (await taskIn(gateway.store.db, erp, 'pending')).attempts;
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await taskIn(gateway.store.db, erp, 'pending')).toMatchObject({ attempts });

    next = shopConfig({ crm: { url: `${downstream.url}/crm`, ...quick }, erp: { url: `${downstream.url}/erp`, ...quick } });
    expect((await api('/api/config/reload', { body: {} })).json).toMatchObject({ reloaded: true, previousVersion: removed.json.configVersion });
    await taskIn(gateway.store.db, erp, 'succeeded');
    expect(downstream.effects('/erp').map((effect) => effect.key)).toEqual([erp]);
  });

  it('holds no connection of the configs it replaced', async () => {
    // The forwarder, ingest and the alert rounds each write on a connection of their own.
    const lanes = async () =>
      engine() === 'pglite'
        ? 0
        : Number(
            (
              await rows<{ n: string }>(
                gateway.store.db,
                sql`select count(*) as n from pg_stat_activity where datname = current_database() and application_name like 'oncehook lane%'`,
              )
            )[0]!.n,
          );
    // Counted once the running forwarder has finished something: its finish lane opens at its first finish.
    const first = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'reload-lanes-before' }));
    for (const { id } of first.json.tasks) await taskIn(gateway.store.db, id, 'succeeded');
    const before = await lanes();
    for (let i = 0; i < 8; i++) expect((await adminApi(gateway.url)('/api/config/reload', { body: {} })).json).toMatchObject({ reloaded: true });
    const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'reload-lanes-after' }));
    for (const { id } of answer.json.tasks) await taskIn(gateway.store.db, id, 'succeeded');
    // The replaced forwarders end as their attempts do, which here is at once.
    await waitFor(async () => (await lanes()) <= before, 10_000);
  });

  it("hands a source no fresh burst: its spent rate limit outlives the reload", async () => {
    const api = adminApi(gateway.url);
    const crm = { crm: { url: `${downstream.url}/crm`, ...quick } };
    next = shopConfig(crm, { rateLimit: { perSecond: 0.01, burst: 2 } });
    expect((await api('/api/config/reload', { body: {} })).json).toMatchObject({ reloaded: true });
    const statuses = async (prefix: string, n: number) => {
      const seen: number[] = [];
      for (let i = 0; i < n; i++) seen.push((await post(gateway.url, 'shop', shopifyDelivery({ eventId: `${prefix}-${i}` }))).status);
      return seen;
    };
    try {
      expect(await statuses('reload-burst', 3)).toEqual([200, 200, 429]);
      expect((await api('/api/config/reload', { body: {} })).json).toMatchObject({ reloaded: true });
      expect(await statuses('reload-burst-after', 1)).toEqual([429]);
    } finally {
      next = shopConfig(crm);
      expect((await api('/api/config/reload', { body: {} })).json).toMatchObject({ reloaded: true });
    }
    expect(await statuses('reload-burst-lifted', 1)).toEqual([200]);
  });
});
