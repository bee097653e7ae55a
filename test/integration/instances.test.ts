import { afterAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminApi, signedInDashboard } from '../support/admin.ts';
import { shopConfig } from '../support/deliveries.ts';
import { engine, freshDatabase } from '../support/engine.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

const gateways: TestGateway[] = [];
afterAll(async () => {
  for (const gateway of gateways.reverse()) await gateway.close();
});

const first = shopConfig({ crm: { url: 'http://127.0.0.1:9/crm', idempotency: 'key' } });
const second = shopConfig({ crm: { url: 'http://127.0.0.1:9/crm/v2', idempotency: 'key' } });
const WARNING = /The instances run different configs \(1 on [0-9a-f]{12}, 1 on [0-9a-f]{12}\)/;

describe('GET /api/instances', () => {
  it('lists this gateway with its role and the config version /readyz answers', async () => {
    const gateway = await startTestGateway(first, { adminToken: ADMIN_TOKEN });
    gateways.push(gateway);
    const { configVersion } = await (await fetch(`${gateway.url}/readyz`)).json();
    const answer = await adminApi(gateway.url)('/api/instances');
    expect(answer.json).toMatchObject({ instances: [{ role: 'all', pid: process.pid, configVersion }], configVersions: [{ configVersion, instances: 1 }], differ: false });
    await gateway.close();
    gateways.pop();
  });

  // Two gateways share one database only on PostgreSQL: embedded PGlite is one process's.
  if (engine() === 'postgres') {
    it('shows two instances on one PostgreSQL, and the dashboard warns while one is reloaded and the other not', async () => {
      const database = await freshDatabase({ migrated: true });
      let read = first;
      const a = await startTestGateway(first, { database, adminToken: ADMIN_TOKEN });
      const b = await startTestGateway(first, { database, adminToken: ADMIN_TOKEN, reloadConfig: () => read, role: 'worker' });
      gateways.push(a, b);
      const api = adminApi(a.url);
      const dashboard = signedInDashboard(a.url);
      expect((await api('/api/instances')).json).toMatchObject({ differ: false, configVersions: [{ instances: 2 }] });
      expect((await api('/api/instances')).json.instances.map((i: { role: string }) => i.role).sort()).toEqual(['all', 'worker']);
      expect(await dashboard('/ui/home')).not.toMatch(WARNING);

      read = second;
      expect(await b.reload()).toMatchObject({ reloaded: true });
      const differing = (await api('/api/instances')).json;
      expect(differing).toMatchObject({ differ: true });
      expect(differing.configVersions.map((v: { instances: number }) => v.instances)).toEqual([1, 1]);
      expect(await dashboard('/ui/home')).toMatch(WARNING);
      expect(await dashboard('/ui/tasks')).toMatch(WARNING);

      read = first;
      await b.reload();
      expect((await api('/api/instances')).json).toMatchObject({ differ: false });
      expect(await dashboard('/ui/home')).not.toMatch(WARNING);

      // One that stops is gone at once, not after it falls silent.
      await b.close();
      gateways.pop();
      expect((await api('/api/instances')).json.instances).toHaveLength(1);
      await a.close();
      gateways.pop();
      await database.drop();
    });
  }
});
