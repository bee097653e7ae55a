import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, shopifyDelivery } from '../support/deliveries.ts';
import { freshPostgresDatabase, type TestDatabase } from '../support/engine.ts';
import { spawnGateway, type GatewayProcess } from '../support/process.ts';

const SENDER_SECRET = 'sender-secret-9f8e7d6c5b4a';
const OLD_SECRET = 'rotated-out-secret-1a2b3c4d';
const ADMIN_TOKEN = 'admin-token-0a1b2c3d4e5f';

// Secrets and signatures must reach neither the database nor the logs: run real traffic (accepted, duplicate,
// forged) through a real process at the most verbose log level, then search a full dump and every log line.
describe('secrets stay out of the database and the logs', () => {
  let database: TestDatabase;
  let gateway: GatewayProcess;
  const signatures: string[] = [];

  beforeAll(async () => {
    database = await freshPostgresDatabase();
    const configFile = join(mkdtempSync(join(tmpdir(), 'oncehook-secrets-')), 'config.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        sources: {
          shop: {
            adapter: 'shopify',
            secrets: ['${SHOP_SECRET}', '${SHOP_OLD_SECRET}'],
            actions: { crm: { url: 'http://127.0.0.1:9/crm', idempotency: 'key' } },
          },
        },
      }),
    );
    gateway = await spawnGateway({
      args: ['--config', configFile],
      env: {
        DATABASE_URL: database.url,
        LOG_LEVEL: 'trace',
        SHOP_SECRET: SENDER_SECRET,
        SHOP_OLD_SECRET: OLD_SECRET,
        ONCEHOOK_ADMIN_TOKEN: ADMIN_TOKEN,
      },
    });
  });
  afterAll(async () => {
    await gateway?.stop();
    await database?.drop();
  });

  it('after accepted, duplicate and forged deliveries, neither a dump nor the log holds a secret or signature', async () => {
    for (const [i, secret] of [SENDER_SECRET, OLD_SECRET, SENDER_SECRET, 'forged'].entries()) {
      const delivery = shopifyDelivery({ eventId: `e-secret-${i % 3}`, webhookId: `w-${i % 3}`, secret });
      signatures.push(delivery.headers['x-shopify-hmac-sha256']!);
      const answer = await post(gateway.url, 'shop', delivery);
      expect(answer.status).toBe(secret === 'forged' ? 401 : 200);
    }
    await fetch(`${gateway.url}/api/tasks`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    await fetch(`${gateway.url}/api/tasks`, { headers: { authorization: 'Bearer wrong-token' } });

    const dump = execFileSync('pg_dump', ['--data-only', database.url!], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    expect(dump).toContain('e-secret-0');
    // Log lines are written after the answers they describe: read them once the process has ended.
    await gateway.stop();
    if (!gateway.child.stdout!.readableEnded) await once(gateway.child.stdout!, 'end');
    const logs = gateway.output();
    expect(logs).toContain('delivery recorded');
    for (const needle of [SENDER_SECRET, OLD_SECRET, ADMIN_TOKEN, 'wrong-token', ...signatures]) {
      expect(dump, 'database dump').not.toContain(needle);
      expect(logs, 'log output').not.toContain(needle);
    }
  });
});
