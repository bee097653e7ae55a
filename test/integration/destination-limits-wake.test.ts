import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { Forwarder } from '../../src/forward/forwarder.ts';
import { createLogger } from '../../src/log.ts';
import { createMetrics } from '../../src/metrics.ts';
import { openStore } from '../../src/store/connect.ts';
import { TASKS_CHANNEL } from '../../src/store/decisions.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { engine } from '../support/engine.ts';
import { ledger, taskIn, waitFor } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

/** Long enough that no poll falls within a test: whatever wakes a worker here is a notification or its own finish. */
const POLL_MS = 10_000;
/** Its lease (timeoutMs + grace) outlives the test too, so the next lease expiry is no time to look again either. */
const SLOW = { timeoutMs: 20_000 };

const gateways: TestGateway[] = [];
let api: Downstream | undefined;
afterEach(async () => {
  for (const gateway of gateways.splice(0).reverse()) await gateway.close();
  await api?.close();
  api = undefined;
});

async function deliver(gateway: TestGateway, topic: string): Promise<string> {
  const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: `${topic}-${Math.random()}`, topic }));
  expect(answer.json.decision).toBe('accepted');
  return answer.json.tasks[0].id as string;
}

/**
 * One instance, its origin taking one request at a time, and `check` given the notifications heard on the
 * forwarder's channel once the instance is up; after it, a moment for a late one to arrive, then their count.
 */
async function notificationsAround(check: (gateway: TestGateway) => Promise<void>): Promise<number> {
  const gateway = await startTestGateway(
    { destinations: { [api!.url]: { maxInFlight: 1 } }, ...shopConfig({ crm: { url: `${api!.url}/crm`, topics: ['crm'] } }) },
    { forwarder: { pollMs: POLL_MS } },
  );
  gateways.push(gateway);
  let count = 0;
  const stop = await gateway.store.listen(TASKS_CHANNEL, () => count++, () => {});
  try {
    await check(gateway);
    await new Promise((resolve) => setTimeout(resolve, 200));
    return count;
  } finally {
    await stop();
  }
}

describe('a slot of a maxInFlight origin freed by a finish', () => {
  // Two instances on one database, one origin taking one request at a time. A's worker sends the first task; B's
  // looks when the second arrives and is held back by A's request. A's finish freed the slot but woke only A, and
  // B's task waited for B's poll (2 s by default): measured 1.43–1.56 s from A's finish to B's claim here, 9.5 s with
  // the poll at 10 s; woken by A's notification, 18–31 ms. A is stopping (a rolling restart), so it finishes its
  // request and claims nothing more: the second task can only go with B.
  if (engine() === 'postgres') it("wakes another instance's worker held back by the limit, well before its poll", async () => {
    api = await startDownstream();
    api.script('/crm', { steps: [{ status: 201, delayMs: 600 }] });
    const raw = { destinations: { [api.url]: { maxInFlight: 1 } }, ...shopConfig({ crm: { url: `${api.url}/crm`, topics: ['crm'], ...SLOW } }) };
    const web = await startTestGateway(raw, { role: 'web' });
    gateways.push(web);
    const storeA = await openStore({ databaseUrl: web.database.url });
    const a = new Forwarder(
      { config: parseConfig(JSON.stringify(raw), 'test').config, store: storeA, logger: createLogger('silent'), metrics: createMetrics() },
      { pollMs: POLL_MS },
    );
    try {
      await a.start();
      const first = await deliver(web, 'crm');
      await waitFor(() => api!.open().length === 1);
      gateways.push(await startTestGateway(raw, { database: web.database, role: 'worker', forwarder: { pollMs: POLL_MS } }));
      const second = await deliver(web, 'crm');
      // B's look at the ingest's notification came and went: the slot is A's.
      const heldFrom = performance.now();
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(api.requests('/crm')).toHaveLength(1);

      await a.stop();
      // Waiting no longer than B's poll: a timeout here is B left to its poll.
      await waitFor(() => api!.requests('/crm').length === 2, POLL_MS - 1000);
      expect(api.requests('/crm')[1]!.at - heldFrom).toBeLessThan(POLL_MS);
      await taskIn(web.store.db, second, 'succeeded');
      const [firstAttempt] = await ledger(web.store.db, first);
      const [secondAttempt] = await ledger(web.store.db, second);
      // The limit held: B's claim came after A's finish, in database time.
      expect(secondAttempt!.startedAt.getTime()).toBeGreaterThanOrEqual(firstAttempt!.finishedAt!.getTime());
      expect(api.peakOpen()).toBe(1);
    } finally {
      await a.stop();
      await storeA.close();
    }
  });

  // A notification wakes every worker of every instance, each to claim: sent only when a task waits for the slot.
  it('notifies no one when no task waits for it', async () => {
    api = await startDownstream();
    const heard = await notificationsAround(async (gateway) => {
      await taskIn(gateway.store.db, await deliver(gateway, 'crm'), 'succeeded');
    });
    // The ingest's, and nothing after the finish.
    expect(heard).toBe(1);
  });

  // Embedded PGlite has one process, whose worker wakes itself when its finish frees a slot: nothing to tell anyone.
  if (engine() === 'pglite') it('on PGlite, notifies no one even when tasks wait for it', async () => {
    api = await startDownstream();
    api.script('/crm', { otherwise: { status: 201, delayMs: 100 } });
    const deliveries = 3;
    const heard = await notificationsAround(async (gateway) => {
      const ids = [];
      for (let i = 0; i < deliveries; i++) ids.push(await deliver(gateway, 'crm'));
      // One at a time, each sent when the one before finished: the worker's own finish woke it, not its poll.
      for (const id of ids) await taskIn(gateway.store.db, id, 'succeeded');
    });
    // The ingest's, one a delivery.
    expect(heard).toBe(deliveries);
    expect(api.peakOpen()).toBe(1);
  });
});
