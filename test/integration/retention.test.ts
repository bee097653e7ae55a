import { sql, type SQL } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { createLogger } from '../../src/log.ts';
import { startPurger } from '../../src/retention/purger.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { rowsOf } from '../../src/store/rows.ts';

const configJson = shopConfig(undefined, { retention: '30d' });
let gateway: TestGateway;

beforeAll(async () => {
  // Web role: the forwarder would otherwise hold and finish these tasks while the test sets their state.
  gateway = await startTestGateway(configJson, { role: 'web' });
});
afterAll(async () => gateway?.close());

const rows = <T>(query: SQL) => rowsOf<T>(gateway.store.db, query);

async function bodyKept(eventId: string): Promise<boolean> {
  const [row] = await rows<{ kept: boolean }>(sql`select body is not null as kept from tasks where event_id = ${eventId}`);
  return row!.kept;
}

describe('retention', () => {
  it('purges the bodies of tasks finished longer ago than retention, in batches; dedup keys stay as tombstones', async () => {
    for (let i = 0; i < 5; i++) await post(gateway.url, 'shop', shopifyDelivery({ eventId: `old-${i}`, webhookId: `w-old-${i}` }));
    await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'old-unfinished' }));
    await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'recent' }));
    await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'failed-lately' }));
    // Received 31 days ago; 'recent' finished 29 days ago, and 'failed-lately' failed an hour ago after a month
    // waiting for a person: a retry still needs its bytes.
    await gateway.store.db.execute(sql`
      update tasks set
        state = case event_id when 'old-unfinished' then 'needs_review' when 'failed-lately' then 'failed' else 'succeeded' end,
        created_at = now() - interval '31 days',
        updated_at = case event_id when 'recent' then now() - interval '29 days' when 'failed-lately' then now() - interval '1 hour'
          else now() - interval '31 days' end`);
    const [before] = await rows<{ updated: string }>(sql`select updated_at::text as updated from tasks where event_id = 'old-0'`);

    const purger = startPurger(parseConfig(JSON.stringify(configJson), 'test').config, gateway.store, createLogger('silent'), {
      batchSize: 2,
    });
    expect(await purger.runOnce()).toBe(5);
    expect(await purger.runOnce()).toBe(0);
    await purger.stop();

    for (let i = 0; i < 5; i++) expect(await bodyKept(`old-${i}`)).toBe(false);
    expect(await bodyKept('old-unfinished')).toBe(true);
    expect(await bodyKept('recent')).toBe(true);
    expect(await bodyKept('failed-lately')).toBe(true);
    const [after] = await rows<{ updated: string; body_sha256: string }>(
      sql`select updated_at::text as updated, body_sha256 from tasks where event_id = 'old-0'`,
    );
    // The task did not change: its last change stays the time it finished.
    expect(after!.updated).toBe(before!.updated);
    expect(after!.body_sha256).toMatch(/^[0-9a-f]{64}$/);

    const lateRetry = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'old-0', webhookId: 'w-old-0' }));
    expect(lateRetry.json.decision).toBe('duplicate_delivery');
    const lateSubscription = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'old-1', webhookId: 'another' }));
    expect(lateSubscription.json.decision).toBe('duplicate_event');
  });
});
