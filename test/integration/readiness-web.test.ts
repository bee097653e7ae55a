import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway(shopConfig({ crm: { url: 'http://127.0.0.1:9/crm' } }), { role: 'web' });
});
afterAll(async () => gateway?.close());

describe('/readyz on a process that runs no worker', () => {
  // It answered `workers: "alive"` though no worker ran anywhere: the check only found no lease stalled.
  it('names the lease check for what it is and says its own worker is absent, still ready', async () => {
    const answer = await fetch(`${gateway.url}/readyz`);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ ok: true, leases: 'none stalled', stalledLeases: 0, ownWorker: 'absent', configVersion: expect.stringMatching(/^[0-9a-f]{12}$/) });
  });

  it('reports a lease stalled by workers gone elsewhere, and stays ready to record deliveries', async () => {
    const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'web-stalled' }));
    const id = answer.json.tasks[0].id as string;
    await gateway.store.db.execute(sql`update tasks set state = 'in_progress', lease_owner = 'gone',
      lease_expires_at = now() - interval '10 minutes' where id = ${id}`);
    const ready = await fetch(`${gateway.url}/readyz`);
    expect(await ready.json()).toMatchObject({ ok: true, leases: 'stalled', stalledLeases: 1, ownWorker: 'absent' });
    expect(ready.status).toBe(200);
  });
});
