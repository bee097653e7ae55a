import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { createLogger } from '../../src/log.ts';
import { startPurger } from '../../src/retention/purger.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { ADMIN_TOKEN, adminApi, signedInDashboard } from '../support/admin.ts';
import { post } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { sendgridSigner } from '../support/signers.ts';

const sendgrid = sendgridSigner();
const config = {
  sources: { mail: { adapter: 'sendgrid', secrets: [sendgrid.key], retention: '30d', actions: { bounces: { url: 'http://127.0.0.1:9/', topics: ['bounce'] } } } },
};
let gateway: TestGateway;

beforeAll(async () => {
  // Web role: the test sets the tasks' states itself.
  gateway = await startTestGateway(config, { role: 'web', adminToken: ADMIN_TOKEN });
});
afterAll(async () => gateway?.close());

const bounce = (id: string) => ({ email: `${id}@example.com`, event: 'bounce', sg_event_id: id, timestamp: 1764669600 });
const receiptOf = async (eventId: string) =>
  (await rowsOf<{ id: string }>(gateway.store.db, sql`select id from deliveries where event_id = ${eventId} order by seq limit 1`))[0]!.id;
const headersOf = async (eventId: string) => (await adminApi(gateway.url)(`/api/deliveries/${await receiptOf(eventId)}`)).json.headers;

describe("retention of receipts' headers", () => {
  it('purges them with the bodies of their request, never while one of its tasks holds a body; receipts and keys stay', async () => {
    const done = sendgrid.delivery([bounce('a1'), bounce('a2')]);
    expect((await post(gateway.url, 'mail', done)).json.decision).toBe('accepted');
    expect((await post(gateway.url, 'mail', done)).json.items.map((i: { decision: string }) => i.decision)).toEqual(['duplicate_delivery', 'duplicate_delivery']);
    // Its second event's task has not finished: the request's headers stay, for a retry that shapes it again.
    await post(gateway.url, 'mail', sendgrid.delivery([bounce('b1'), bounce('b2')]));
    await post(gateway.url, 'mail', sendgrid.delivery([bounce('recent')]));
    const db = gateway.store.db;
    await db.execute(sql`update deliveries set received_at = now() - interval '31 days' where event_id <> 'recent'`);
    await db.execute(sql`update tasks set state = case event_id when 'b2' then 'needs_review' else 'succeeded' end,
      updated_at = now() - interval '31 days' where event_id <> 'recent'`);
    expect((await headersOf('a2'))['x-twilio-email-event-webhook-timestamp']).toMatch(/^\d+$/);

    const purger = startPurger(parseConfig(JSON.stringify(config), 'test').config, gateway.store, createLogger('silent'), { batchSize: 1 });
    expect(await purger.runOnce()).toBe(3);
    await purger.runOnce();
    await purger.stop();

    const kept = await rowsOf<{ event_id: string; decision: string; kept: boolean }>(
      db,
      sql`select event_id, decision, coalesce(headers, (select h.headers from deliveries h where h.id = d.headers_from)) is not null as kept
          from deliveries d order by seq`,
    );
    expect(kept.map((r) => [r.event_id, r.decision, r.kept])).toEqual([
      ['a1', 'accepted', false],
      ['a2', 'accepted', false],
      ['a1', 'duplicate_delivery', false],
      ['a2', 'duplicate_delivery', false],
      ['b1', 'accepted', true],
      ['b2', 'accepted', true],
      ['recent', 'accepted', true],
    ]);
    expect(await headersOf('a2')).toBeNull();
    expect(await signedInDashboard(gateway.url)(`/ui/deliveries/${await receiptOf('a2')}`)).toContain('Purged by retention');
    expect((await headersOf('b2'))['content-type']).toBe('application/json');
    expect((await post(gateway.url, 'mail', done)).json.items.map((i: { decision: string }) => i.decision)).toEqual(['duplicate_delivery', 'duplicate_delivery']);
  });
});
