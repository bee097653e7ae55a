import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { freshPostgresDatabase, type TestDatabase } from '../support/engine.ts';
import { spawnGateway, type GatewayProcess } from '../support/process.ts';

const SENDER_SECRET = 'sender-secret-9f8e7d6c5b4a';
const OLD_SECRET = 'rotated-out-secret-1a2b3c4d';
const ADMIN_TOKEN = 'admin-token-0a1b2c3d4e5f';
const API_TOKEN = 'crm-api-token-5e6f7a8b9c0d';
const LOOKUP_KEY = 'crm-lookup-key-1f2e3d4c5b6a';

// Secrets and signatures must reach neither the database nor the logs: run real traffic (accepted, duplicate,
// forged) through a real process at the most verbose log level, then search a full dump and every log line.
describe('secrets stay out of the database and the logs', () => {
  let database: TestDatabase;
  let gateway: GatewayProcess;
  let api: Downstream;
  const signatures: string[] = [];

  beforeAll(async () => {
    database = await freshPostgresDatabase();
    api = await startDownstream();
    const configFile = join(mkdtempSync(join(tmpdir(), 'oncehook-secrets-')), 'config.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        sources: {
          shop: {
            adapter: 'shopify',
            secrets: ['${SHOP_SECRET}', '${SHOP_OLD_SECRET}'],
            actions: {
              crm: { url: 'http://127.0.0.1:9/crm', idempotency: 'key' },
              // An action that calls an API with its credentials: sends, a 401, an unknown outcome and its lookups.
              contacts: {
                url: `${api.url}/contacts`,
                topics: ['customers/create'],
                headers: { Authorization: 'Bearer ${API_TOKEN}' },
                transform: '{"email": email, "external_id": $taskId, "seen": $headers}',
                lookup: { url: `${api.url}/contacts/lookup?key={key}`, headers: { 'X-Api-Key': '${LOOKUP_KEY}' }, found: { id: { $exist: true } } },
                timeoutMs: 500,
                maxAttempts: 2,
                backoff: { initialMs: 20, maxMs: 50 },
              },
            },
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
        API_TOKEN,
        LOOKUP_KEY,
      },
    });
  });
  afterAll(async () => {
    await gateway?.stop();
    await database?.drop();
    await api?.close();
  });

  it('after accepted, duplicate and forged deliveries, neither a dump nor the log holds a secret or signature', async () => {
    // The first send is refused (401), the next answers 500 (it may have acted): its lookups go out with their key.
    api.script('/contacts', { steps: [{ status: 401 }, { status: 500 }], lookup: [{ status: 503 }, { status: 200, json: { id: 'ct_1' } }] });
    for (const [i, secret] of [SENDER_SECRET, OLD_SECRET, SENDER_SECRET, 'forged'].entries()) {
      const delivery = shopifyDelivery({ eventId: `e-secret-${i % 3}`, webhookId: `w-${i % 3}`, secret });
      signatures.push(delivery.headers['x-shopify-hmac-sha256']!);
      const answer = await post(gateway.url, 'shop', delivery);
      expect(answer.status).toBe(secret === 'forged' ? 401 : 200);
    }
    await fetch(`${gateway.url}/api/tasks`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    await fetch(`${gateway.url}/api/tasks`, { headers: { authorization: 'Bearer wrong-token' } });
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
    const resume = () => fetch(`${gateway.url}/api/destinations/${encodeURIComponent(api.url)}/resume`, { method: 'POST', headers: admin, body: '{"note": "token fixed"}' });
    // Paused by the 401: resumed, the second task goes, answers 500, and its lookups settle it.
    const refused = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'e-api-1', topic: 'customers/create', body: JSON.stringify({ email: 'a@example.com' }), secret: SENDER_SECRET }));
    const paused = async () => (await (await fetch(`${gateway.url}/api/destinations`, { headers: admin })).json()).items.some((d: any) => d.status === 'paused');
    for (let i = 0; i < 100 && !(await paused()); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await resume()).status).toBe(200);
    const settled = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'e-api-2', topic: 'customers/create', body: JSON.stringify({ email: 'b@example.com' }), secret: SENDER_SECRET }));
    const taskOf = (answer: any) => answer.json.tasks.find((t: any) => t.action === 'contacts').id;
    const view = async (id: string) => (await fetch(`${gateway.url}/api/tasks/${id}`, { headers: admin })).json();
    for (let i = 0; i < 200 && (await view(taskOf(settled))).state !== 'succeeded'; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    const shown = await view(taskOf(settled));
    expect(shown.state).toBe('succeeded');
    expect(shown.request.headers).toEqual(['Authorization']);
    expect(JSON.stringify(await view(taskOf(refused)))).not.toContain(API_TOKEN);
    const sent = api.requests('/contacts');
    expect(sent.filter((r) => r.method === 'POST').every((r) => r.headers.authorization === `Bearer ${API_TOKEN}`)).toBe(true);
    expect(sent.filter((r) => r.method === 'GET').map((r) => r.headers['x-api-key'])).toEqual([LOOKUP_KEY, LOOKUP_KEY]);
    // The delivery's own credentials reach a transform redacted: $headers holds its signature as a marker.
    expect(JSON.parse(sent.find((r) => r.method === 'POST')!.body.toString()).seen['x-shopify-hmac-sha256']).toBe('[redacted]');

    const dump = execFileSync('pg_dump', ['--data-only', database.url!], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    expect(dump).toContain('e-secret-0');
    // Log lines are written after the answers they describe: read them once the process has ended.
    await gateway.stop();
    if (!gateway.child.stdout!.readableEnded) await once(gateway.child.stdout!, 'end');
    const logs = gateway.output();
    expect(logs).toContain('delivery recorded');
    expect(logs).toContain('lookup');
    for (const needle of [SENDER_SECRET, OLD_SECRET, ADMIN_TOKEN, 'wrong-token', API_TOKEN, LOOKUP_KEY, ...signatures]) {
      expect(dump, 'database dump').not.toContain(needle);
      expect(logs, 'log output').not.toContain(needle);
    }
  });
});
