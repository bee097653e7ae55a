import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/store/rows.ts';
import { ADMIN_TOKEN, adminApi, signedInDashboard } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { ledger, taskIn, waitFor } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { capture } from '../support/log-lines.ts';

const TOKEN = 'crm-bearer-token-4e5f6a7b8c9d';
const CUSTOM = 'custom-header-secret-1a2b3c';
const LOOKUP_TOKEN = 'lookup-bearer-token-0f1e2d3c';
const SECRETS = [TOKEN, CUSTOM, LOOKUP_TOKEN];

/**
 * A downstream that echoes the credentials it was sent, in its status text and its body — as a careless API's
 * `401 invalid token Bearer …` does — and answers `status`.
 */
async function echoing(status: number): Promise<{ url: string; server: Server }> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const said = `${request.headers.authorization ?? ''} ${request.headers['x-custom-key'] ?? ''}`.trim();
      response.writeHead(status, `Refused ${said}`, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: `invalid credentials: ${said}`, headers: request.headers }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

let gateway: TestGateway;
const log = capture('trace');
const servers: Server[] = [];
let refused: string;
let unknown: string;

beforeAll(async () => {
  // A send refused (401), and a send whose outcome is unknown (502) asked of a lookup that refuses (403): every
  // answer echoes the credentials it came with. Three origins: a refusal pauses its own.
  const [crm, contacts, search] = await Promise.all([echoing(401), echoing(502), echoing(403)]);
  servers.push(crm.server, contacts.server, search.server);
  const fast = { timeoutMs: 300, maxAttempts: 1, backoff: { initialMs: 20, maxMs: 50 } };
  gateway = await startTestGateway(
    shopConfig({
      crm: { url: `${crm.url}/crm`, topics: ['crm'], headers: { Authorization: `Bearer ${TOKEN}`, 'X-Custom-Key': CUSTOM }, ...fast },
      contact: {
        url: `${contacts.url}/contacts`,
        topics: ['contact'],
        headers: { Authorization: `Bearer ${TOKEN}`, 'X-Custom-Key': CUSTOM },
        lookup: { url: `${search.url}/find?id={key}`, headers: { Authorization: `Bearer ${LOOKUP_TOKEN}` }, found: { n: 1 } },
        ...fast,
      },
    }),
    { adminToken: ADMIN_TOKEN, logger: log.logger },
  );
  const deliver = async (topic: string) => (await post(gateway.url, 'shop', shopifyDelivery({ eventId: `echo-${topic}`, topic }))).json.tasks[0].id as string;
  [refused, unknown] = [await deliver('crm'), await deliver('contact')];
  await taskIn(gateway.store.db, refused, 'failed');
  // The lookup answered: its 403 paused the search origin, and the task waits, unknown, for a person to resume it.
  await waitFor(async () => (await ledger(gateway.store.db, unknown)).some((row) => row.kind === 'lookup' && row.finishedAt !== null), 30_000);
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

const expectNone = (where: string, text: string) => {
  for (const secret of SECRETS) expect(text.includes(secret), `${where} holds ${secret.slice(0, 10)}…`).toBe(false);
};

describe('credentials a downstream echoes', () => {
  it('are masked in the ledger and the last error, which still say what was refused', async () => {
    const api = adminApi(gateway.url);
    const view = (await api(`/api/tasks/${refused}`)).json;
    expect(view.lastError).toMatch(/^401 Refused \[redacted\]/);
    expect(view.lastError).toContain('invalid credentials: [redacted]');
    const lookedUp = (await api(`/api/tasks/${unknown}`)).json;
    expect(JSON.stringify(lookedUp)).toContain('403 Refused [redacted]');
  });

  it('are nowhere in the database, the API, the dashboard or the logs at trace', async () => {
    const api = adminApi(gateway.url);
    const dashboard = signedInDashboard(gateway.url);
    for (const path of [`/api/tasks/${refused}`, `/api/tasks/${unknown}`, '/api/tasks?state=failed', '/api/tasks?state=outcome_unknown', '/api/destinations']) {
      expectNone(path, JSON.stringify((await api(path)).json));
    }
    for (const path of [`/ui/tasks/${refused}`, `/ui/tasks/${unknown}`, '/ui/attention', '/ui/tasks', '/ui/destinations', '/ui/home']) {
      const html = await dashboard(path);
      expectNone(path, html);
    }
    expect(await dashboard(`/ui/tasks/${refused}`)).toContain('[redacted]');
    const tables = await rowsOf<{ name: string }>(gateway.store.db, sql`select table_name as name from information_schema.tables where table_schema = 'public'`);
    for (const { name } of tables) {
      const [row] = await rowsOf<{ text: string | null }>(gateway.store.db, sql`select string_agg(t::text, ' ') as text from ${sql.identifier(name)} t`);
      expectNone(`table ${name}`, row!.text ?? '');
    }
    expect(log.lines.some((line) => line.level === 10 || line.level === 20)).toBe(true);
    expect(log.lines.some((line) => String(line.error ?? '').includes('[redacted]'))).toBe(true);
    expectNone('the log', JSON.stringify(log.lines));
  });
});
