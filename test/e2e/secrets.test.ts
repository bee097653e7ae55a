import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { freshPostgresDatabase, type TestDatabase } from '../support/engine.ts';
import type { GatewayProcess } from '../support/process.ts';
import { ADMIN_TOKEN, expectNoSecretKept, sendAcceptedDuplicateForged, SENDER_SECRET, spawnSecretsGateway } from '../support/secrets-probe.ts';

const API_TOKEN = 'crm-api-token-5e6f7a8b9c0d';
const LOOKUP_KEY = 'crm-lookup-key-1f2e3d4c5b6a';

// Secrets and signatures must reach neither the database nor the logs: run real traffic (accepted, duplicate,
// forged) through a real process at the most verbose log level, then search a full dump and every log line.
describe('secrets stay out of the database and the logs', () => {
  let database: TestDatabase;
  let gateway: GatewayProcess;
  let api: Downstream;

  beforeAll(async () => {
    database = await freshPostgresDatabase();
    api = await startDownstream();
    gateway = await spawnSecretsGateway(
      database,
      {
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
      { API_TOKEN, LOOKUP_KEY },
    );
  });
  afterAll(async () => {
    await gateway?.stop();
    await database?.drop();
    await api?.close();
  });

  it('after accepted, duplicate and forged deliveries, neither a dump nor the log holds a secret or signature', async () => {
    // The first send is refused (401), the next answers 500 (it may have acted): its lookups go out with their key.
    api.script('/contacts', { steps: [{ status: 401 }, { status: 500 }], lookup: [{ status: 503 }, { status: 200, json: { id: 'ct_1' } }] });
    const signatures = await sendAcceptedDuplicateForged(gateway.url);
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

    const logs = await expectNoSecretKept(database, gateway, [API_TOKEN, LOOKUP_KEY, ...signatures]);
    expect(logs).toContain('lookup');
  });
});
