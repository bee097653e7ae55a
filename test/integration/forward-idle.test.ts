import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { Forwarder } from '../../src/forward/forwarder.ts';
import { Routes } from '../../src/forward/routes.ts';
import { createLogger } from '../../src/log.ts';
import { createMetrics } from '../../src/metrics.ts';
import { claimTasks, nextDueInMs } from '../../src/store/atomic/claim.ts';
import { recordDeliveries } from '../../src/store/atomic/record.ts';
import { shopConfig } from '../support/deliveries.ts';
import { freshStore, type TestStore } from '../support/engine.ts';
import { beforeEachStatement } from '../support/interleave.ts';
import { shopReceipt } from '../support/receipts.ts';

let t: TestStore;
beforeAll(async () => {
  t = await freshStore();
});
afterAll(async () => t?.close());

describe('an idle forwarder', () => {
  it('hears that nothing waits as nothing, and a retry waiting as its time', async () => {
    expect(await nextDueInMs(t.store.db, null)).toBeNull();
    await recordDeliveries(t.store.db, [shopReceipt('idle-d1', 'idle-e1')]);
    await t.store.db.execute(sql`update tasks set state = 'succeeded'`);
    expect(await nextDueInMs(t.store.db, null)).toBeNull();
    await recordDeliveries(t.store.db, [shopReceipt('idle-d2', 'idle-e2')]);
    await t.store.db.execute(sql`update tasks set next_attempt_at = now() + interval '5 seconds' where state = 'pending'`);
    const ms = await nextDueInMs(t.store.db, null);
    expect(ms).toBeGreaterThan(4000);
    expect(ms).toBeLessThanOrEqual(5000);
    await t.store.db.execute(sql`update tasks set state = 'succeeded'`);
  });

  it('counts what fell due since the claim in the claim\'s own time, however late it looks', async () => {
    const { config } = parseConfig(JSON.stringify(shopConfig({ crm: { url: 'http://127.0.0.1:9/crm' } })), 'test');
    const routes = new Routes(config, 100).forClaim;
    await recordDeliveries(t.store.db, [shopReceipt('idle-d3', 'idle-e3')]);
    await t.store.db.execute(sql`update tasks set next_attempt_at = now() + interval '150 milliseconds' where state = 'pending'`);
    const claim = await claimTasks(t.store.db, { owner: 'idle', routes, limit: 10 });
    expect(claim.tasks).toEqual([]);
    // The look at the next due time starts well after the retry fell due, as it may on a busy machine.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await nextDueInMs(t.store.db, claim.at)).toBe(0);
    // Due before the claim and not taken: blocked (another worker's lock, a paused destination), no loop over it.
    const [taken] = (await claimTasks(t.store.db, { owner: 'idle', routes, limit: 10 })).tasks;
    expect(taken).toBeDefined();
    await t.store.db.execute(sql`update tasks set state = 'pending', next_attempt_at = now() - interval '1 second' where state = 'in_progress'`);
    await t.store.db.execute(sql`insert into destinations (origin, paused_at, paused_reason) values ('http://127.0.0.1:9', now(), 'test')`);
    const blocked = await claimTasks(t.store.db, { owner: 'idle', routes, limit: 10 });
    expect(blocked.tasks).toEqual([]);
    expect(await nextDueInMs(t.store.db, blocked.at)).toBeNull();
    await t.store.db.execute(sql`update tasks set state = 'succeeded'`);
    await t.store.db.execute(sql`delete from destinations`);
  });

  it('looks at its queue once a poll, not in a loop', async () => {
    await t.store.db.execute(sql`update tasks set state = 'succeeded'`);
    const { config } = parseConfig(JSON.stringify(shopConfig({ crm: { url: 'http://127.0.0.1:9/crm' } })), 'test');
    let statements = 0;
    const watched = beforeEachStatement(t.store, () => void statements++);
    const forwarder = new Forwarder({ config, store: watched, logger: createLogger('silent'), metrics: createMetrics() }, { pollMs: 500 });
    await forwarder.start();
    await new Promise((resolve) => setTimeout(resolve, 1600));
    await forwarder.stop(1000);
    // A pass is a claim, a look for expired leases now and then, and the next due time: a handful in four polls.
    expect(statements).toBeGreaterThan(0);
    expect(statements).toBeLessThan(20);
  });
});
