import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { freshPostgresDatabase, type TestDatabase } from '../support/engine.ts';
import { waitFor } from '../support/forwarding.ts';
import { spawnGateway, type GatewayProcess } from '../support/process.ts';

describe('serve --role web and --role worker on one PostgreSQL', () => {
  let database: TestDatabase;
  let downstream: Downstream;
  let web: GatewayProcess;
  let worker: GatewayProcess;

  beforeAll(async () => {
    [database, downstream] = await Promise.all([freshPostgresDatabase(), startDownstream()]);
    const configFile = join(mkdtempSync(join(tmpdir(), 'oncehook-roles-')), 'config.json');
    writeFileSync(configFile, JSON.stringify(shopConfig({ crm: { url: `${downstream.url}/crm`, idempotency: 'key' } })));
    const env = { DATABASE_URL: database.url };
    web = await spawnGateway({ args: ['--config', configFile, '--role', 'web'], env });
    worker = await spawnGateway({ args: ['--config', configFile], env: { ...env, ONCEHOOK_ROLE: 'worker' } });
  });
  afterAll(async () => {
    await Promise.all([web?.stop(), worker?.stop()]);
    await downstream?.close();
    await database?.drop();
  });

  it('the web process receives, the worker process forwards, woken by the NOTIFY of the ingest transaction', async () => {
    const answer = await post(web.url, 'shop', shopifyDelivery({ eventId: 'roles-1' }));
    expect(answer.json.decision).toBe('accepted');
    const [request] = await waitFor(() => (downstream.requests('/crm').length > 0 ? downstream.requests('/crm') : undefined));
    expect(request!.headers['idempotency-key']).toBe(answer.json.tasks[0].id);

    // Counted once the attempt is recorded, just after the downstream answered.
    await waitFor(async () =>
      /oncehook_forward_attempts_total\{source="shop",action="crm",class="success"\} 1/.test(await (await fetch(`${worker.url}/metrics`)).text()),
    );
    const webMetrics = await (await fetch(`${web.url}/metrics`)).text();
    expect(webMetrics).not.toMatch(/oncehook_forward_attempts_total\{/);
  });

  it('a worker serves health and metrics only', async () => {
    expect((await fetch(`${worker.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${worker.url}/readyz`)).status).toBe(200);
    const refused = await post(worker.url, 'shop', shopifyDelivery({ eventId: 'roles-2' }));
    expect(refused.status).toBe(404);
    expect(refused.json.error.message).toMatch(/runs --role worker: .* deliveries, the admin API and the dashboard are on the web processes/);
  });
});
