import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { Forwarder } from '../../src/forward/forwarder.ts';
import { createLogger } from '../../src/log.ts';
import { createMetrics } from '../../src/metrics.ts';
import { nextDueInMs, recordDeliveries } from '../../src/store/atomic.ts';
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
    expect(await nextDueInMs(t.store.db, 0)).toBeNull();
    await recordDeliveries(t.store.db, [shopReceipt('idle-d1', 'idle-e1')]);
    await t.store.db.execute(sql`update tasks set state = 'succeeded'`);
    expect(await nextDueInMs(t.store.db, 0)).toBeNull();
    await recordDeliveries(t.store.db, [shopReceipt('idle-d2', 'idle-e2')]);
    await t.store.db.execute(sql`update tasks set next_attempt_at = now() + interval '5 seconds' where state = 'pending'`);
    const ms = await nextDueInMs(t.store.db, 0);
    expect(ms).toBeGreaterThan(4000);
    expect(ms).toBeLessThanOrEqual(5000);
    // Due a second ago: blocked, if the last claim came after (no loop over it); due now, if the claim came before.
    await t.store.db.execute(sql`update tasks set next_attempt_at = now() - interval '1 second' where state = 'pending'`);
    expect(await nextDueInMs(t.store.db, 0)).toBeNull();
    expect(await nextDueInMs(t.store.db, 5000)).toBe(0);
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
