import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminApi, signedInDashboard } from '../support/admin.ts';
import { post, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { freshPostgresDatabase, type TestDatabase } from '../support/engine.ts';
import { waitFor } from '../support/forwarding.ts';
import { runCli, type GatewayProcess } from '../support/process.ts';
import { ADMIN_TOKEN, expectNoSecretKept, sendAcceptedDuplicateForged, SENDER_SECRET, spawnSecretsGateway } from '../support/secrets-probe.ts';

/** An action's header and its lookup's own: credentials for somebody else's API (docs/actions.md#secrets). */
const CRM_TOKEN = 'crm-bearer-token-7c6b5a4d3e2f';
const CRM_READ_TOKEN = 'crm-read-token-1f2e3d4c5b6a';

// Secrets and signatures must reach neither the database nor the logs: run real traffic (accepted, duplicate,
// forged; a send and a lookup with credentials of their own) through a real process at the most verbose log
// level, then search a full dump and every log line.
describe('an action\'s credentials stay out of every view, the database and the logs', () => {
  let database: TestDatabase;
  let downstream: Downstream;
  let gateway: GatewayProcess;
  const signatures: string[] = [];

  beforeAll(async () => {
    [database, downstream] = await Promise.all([freshPostgresDatabase(), startDownstream()]);
    gateway = await spawnSecretsGateway(
      database,
      {
        crm: { url: 'http://127.0.0.1:9/crm', idempotency: 'key', topics: ['orders/create'] },
        // No key: the unknown outcome of its first send is settled by asking the lookup, with its own token.
        contact: {
          url: `${downstream.url}/contacts`,
          topics: ['customers/create'],
          headers: { Authorization: 'Bearer ${CRM_TOKEN}' },
          timeoutMs: 500,
          lookup: {
            url: `${downstream.url}/contacts/lookup?external_id={key}`,
            headers: { Authorization: 'Bearer ${CRM_READ_TOKEN}' },
            found: { results: { external_id: { $exist: true } } },
          },
        },
      },
      { CRM_TOKEN, CRM_READ_TOKEN },
      // A limited origin too: its claims go through oncehook_claim_batch_limited, its use through /api/destinations.
      { destinations: { [downstream.url]: { rateLimit: { perSecond: 50 }, maxInFlight: 4 } } },
    );
  });
  afterAll(async () => {
    await gateway?.stop();
    await downstream?.close();
    await database?.drop();
  });

  it("an action's header and its lookup's are sent, and shown by no API answer, CLI output or dashboard page", async () => {
    // The send is read and its connection dropped: the outcome is unknown, and the lookup finds the contact.
    downstream.script('/contacts', { steps: ['reset-after-read'], lookup: [{ status: 200, json: { results: [{ external_id: 'x' }] } }] });
    const delivery = shopifyDelivery({ eventId: 'e-contact', topic: 'customers/create', secret: SENDER_SECRET });
    signatures.push(delivery.headers['x-shopify-hmac-sha256']!);
    const answer = await post(gateway.url, 'shop', delivery);
    expect(answer.json.decision).toBe('accepted');
    const id: string = answer.json.tasks.find((t: { action: string }) => t.action === 'contact').id;
    const api = adminApi(gateway.url, ADMIN_TOKEN);
    const view = await waitFor(async () => {
      const task = (await api(`/api/tasks/${id}`)).json;
      return task.state === 'succeeded' ? task : undefined;
    });
    // Both credentials were really used, each where it belongs.
    const [send, lookup] = downstream.requests('/contacts');
    expect([send!.method, send!.headers.authorization]).toEqual(['POST', `Bearer ${CRM_TOKEN}`]);
    expect([lookup!.method, lookup!.headers.authorization]).toEqual(['GET', `Bearer ${CRM_READ_TOKEN}`]);
    expect(view.ledger.map((a: { class: string }) => a.class)).toEqual(['unknown', 'lookup_found']);
    // The view names the header, never its value.
    expect(view.request.headers).toEqual(['Authorization']);

    const cli = (args: string[]) => runCli(args, { ONCEHOOK_URL: gateway.url, ONCEHOOK_ADMIN_TOKEN: ADMIN_TOKEN });
    const dashboard = signedInDashboard(gateway.url, ADMIN_TOKEN);
    const shown: Record<string, string> = {
      'GET /api/tasks/{id}': JSON.stringify(view),
      'GET /api/tasks': JSON.stringify((await api('/api/tasks')).json),
      'GET /api/destinations': JSON.stringify((await api('/api/destinations')).json),
      'oncehook show': (await cli(['show', id])).stdout,
      'oncehook show --json': (await cli(['show', id, '--json'])).stdout,
      'oncehook destinations': (await cli(['destinations'])).stdout,
      'dashboard task page': await dashboard(`/ui/tasks/${id}`),
      'dashboard destinations page': await dashboard('/ui/destinations'),
    };
    // Each really is the task's (or the destination's): a blank answer would hide nothing.
    for (const [where, text] of Object.entries(shown)) {
      expect(text, where).toContain(where.includes('destinations') ? downstream.url : id);
      expect(text, where).not.toContain(CRM_TOKEN);
      expect(text, where).not.toContain(CRM_READ_TOKEN);
    }
  });

  it('after accepted, duplicate and forged deliveries, neither a dump nor the log holds a secret or signature', async () => {
    // The action's and the lookup's credentials went out (the test above), so there was something to leak.
    expect(downstream.requests('/contacts').map((r) => r.headers.authorization)).toEqual([`Bearer ${CRM_TOKEN}`, `Bearer ${CRM_READ_TOKEN}`]);
    signatures.push(...(await sendAcceptedDuplicateForged(gateway.url)));
    await expectNoSecretKept(database, gateway, [CRM_TOKEN, CRM_READ_TOKEN, ...signatures]);
  });
});
