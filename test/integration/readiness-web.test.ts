import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shopConfig } from '../support/deliveries.ts';
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
    expect(await answer.json()).toMatchObject({ ok: true, leases: 'none stalled', stalledLeases: 0, ownWorker: 'absent' });
  });
});
