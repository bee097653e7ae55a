import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminApi } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { ledger, rows, taskIn, waitFor } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { capture } from '../support/log-lines.ts';
import { startTokenEndpoint, type TokenEndpoint } from '../support/token-endpoint.ts';

const FAST = { timeoutMs: 1000, backoff: { initialMs: 20, maxMs: 100 } };
const CLIENT_SECRET = 'client-secret-0b9d55e1a7';

let gateway: TestGateway;
let api: Downstream;
/** Downstreams of their own: a pause of their origin holds nothing of the other cases. */
let locked: Downstream;
let closed: Downstream;
let tokens: TokenEndpoint;
const logs = capture('trace');
// The config's ${CLIENT_SECRET}, as an operator would set it.
process.env.CLIENT_SECRET = CLIENT_SECRET;

const oauth2 = (path: string, extra: object = {}) => ({
  oauth2: { tokenUrl: `${tokens.url}${path}`, clientId: `client${path.replaceAll('/', '-')}`, clientSecret: '${CLIENT_SECRET}', ...extra },
});

beforeAll(async () => {
  [api, locked, closed, tokens] = await Promise.all([startDownstream(), startDownstream(), startDownstream(), startTokenEndpoint()]);
  const action = (name: string, extra: object = {}) => ({ url: `${api.url}/${name}`, topics: [name], auth: oauth2(`/token/${name}`), ...FAST, ...extra });
  const config = shopConfig({
    many: action('many', { auth: oauth2('/token/many', { scope: 'tasks.write contacts.read', audience: 'https://api.crm.example' }) }),
    brief: action('brief'),
    body: action('body', { auth: oauth2('/token/body', { clientAuth: 'body' }) }),
    revoked: action('revoked', {
      idempotency: 'key',
      lookup: { url: `${api.url}/revoked/lookup?key={key}`, found: { id: { $exist: true } } },
    }),
    overloaded: action('overloaded'),
    unreachable: action('unreachable', { auth: oauth2('/token', { tokenUrl: 'http://127.0.0.1:9/token' }) }),
    refusing: { ...action('refusing'), url: `${locked.url}/refusing` },
    badclient: { ...action('badclient'), url: `${closed.url}/badclient` },
  });
  gateway = await startTestGateway(config, { adminToken: ADMIN_TOKEN, logger: logs.logger });
}, 30_000);
afterAll(async () => {
  await gateway?.close();
  await Promise.all([api?.close(), locked?.close(), closed?.close(), tokens?.close()]);
});

const db = () => gateway.store.db;

async function deliver(topic: string): Promise<string> {
  const delivery = shopifyDelivery({ eventId: `${topic}-${Math.random()}`, topic, body: JSON.stringify({ id: Math.random() }) });
  const answer = await post(gateway.url, 'shop', delivery);
  expect(answer.status).toBe(200);
  return answer.json.tasks[0].id;
}

describe('an action with auth.oauth2', () => {
  it('fetches one token for many tasks, with the client in Basic auth, the scope and the audience, and sends it on each', async () => {
    const ids = await Promise.all(Array.from({ length: 12 }, () => deliver('many')));
    for (const id of ids) await taskIn(db(), id, 'succeeded');
    const [asked, ...more] = tokens.requests('/token/many');
    expect(more).toEqual([]);
    expect(asked).toMatchObject({
      via: 'basic',
      clientId: 'client-token-many',
      clientSecret: CLIENT_SECRET,
      form: { grant_type: 'client_credentials', scope: 'tasks.write contacts.read', audience: 'https://api.crm.example' },
    });
    const [token] = tokens.issued('/token/many');
    expect(new Set(api.requests('/many').map((r) => r.headers.authorization))).toEqual(new Set([`Bearer ${token}`]));
  });

  it('sends the client in the form with clientAuth "body"', async () => {
    await taskIn(db(), await deliver('body'), 'succeeded');
    expect(tokens.requests('/token/body')).toEqual([
      expect.objectContaining({ via: 'body', clientId: 'client-token-body', clientSecret: CLIENT_SECRET }),
    ]);
  });

  it('fetches a new token once the one held is about to expire', async () => {
    tokens.script('/token/brief', { expiresIn: 1 });
    await taskIn(db(), await deliver('brief'), 'succeeded');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await taskIn(db(), await deliver('brief'), 'succeeded');
    const issued = tokens.issued('/token/brief');
    expect(issued).toHaveLength(2);
    expect(api.requests('/brief').map((r) => r.headers.authorization)).toEqual(issued.map((token) => `Bearer ${token}`));
  });

  it('takes a 401 as a token no longer honoured: not sent, a new token fetched once, and sent with it', async () => {
    // The API echoes the token it refuses, as some do: it is masked before anything keeps the answer.
    api.script('/revoked', { steps: [{ status: 401, json: { error: `token ${tokens.next('/token/revoked')} expired` } }] });
    const id = await deliver('revoked');
    await taskIn(db(), id, 'succeeded');
    const [first, second] = tokens.issued('/token/revoked');
    expect(api.requests('/revoked').map((r) => r.headers.authorization)).toEqual([`Bearer ${first}`, `Bearer ${second}`]);
    const [refused, sent] = await ledger(db(), id);
    expect(refused).toMatchObject({ class: 'not_sent', responseStatus: 401 });
    expect(refused!.error).toMatch(/^not sent: 401 Unauthorized: .*\[redacted\].*; the next attempt fetches a new token$/);
    expect(sent).toMatchObject({ class: 'success' });
  });

  it('fails the task and pauses the destination when the API refuses a token fetched after its 401', async () => {
    locked.script('/refusing', { otherwise: { status: 401 } });
    const id = await deliver('refusing');
    const failed = await taskIn(db(), id, 'failed');
    expect(failed.lastError).toMatch(/^401/);
    expect(tokens.issued('/token/refusing')).toHaveLength(2);
    expect(locked.requests('/refusing')).toHaveLength(2);
    const [paused] = await rows<{ reason: string }>(db(), sql`select paused_reason as reason from destinations where origin = ${locked.url}`);
    expect(paused!.reason).toMatch(/^401 refused oncehook's request/);
  });

  it('holds the task pending, nothing sent, and cools its destination while the token endpoint answers 5xx, then sends it', async () => {
    tokens.script('/token/overloaded', { steps: [503, 500] });
    const id = await deliver('overloaded');
    await taskIn(db(), id, 'succeeded');
    const entries = await ledger(db(), id);
    expect(entries.map((e) => [e.class, e.decision])).toEqual([
      ['not_sent', 'retry with backoff'],
      ['not_sent', 'retry with backoff'],
      ['success', 'succeeded'],
    ]);
    expect(entries[0]!.error).toBe('not sent: the token endpoint answered 503 Service Unavailable');
    expect(api.requests('/overloaded')).toHaveLength(1);
    // The origin cooled down meanwhile, so that its other tasks waited rather than spending their attempts.
    const [cooled] = await rows<{ at: Date | null }>(db(), sql`select cooldown_until as at from destinations where origin = ${api.url}`);
    expect(cooled!.at).not.toBeNull();
  });

  it('holds the task pending, nothing sent, while the token endpoint cannot be reached', async () => {
    const id = await deliver('unreachable');
    const [entry] = await waitFor(async () => {
      const entries = await ledger(db(), id);
      return entries.length > 0 && entries[0]!.finishedAt !== null && entries;
    });
    expect(entry).toMatchObject({ class: 'not_sent', decision: 'retry with backoff' });
    expect(entry!.error).toMatch(/^not sent: the token endpoint could not be reached: /);
    expect(api.requests('/unreachable')).toEqual([]);
  });

  it('pauses the destination with the reason when the token endpoint refuses the client, and sends nothing', async () => {
    tokens.script('/token/badclient', { steps: [401] });
    const id = await deliver('badclient');
    const [paused] = await waitFor(async () => {
      const found = await rows<{ reason: string }>(db(), sql`select paused_reason as reason from destinations where origin = ${closed.url}`);
      return found[0]?.reason ? found : undefined;
    });
    expect(paused!.reason).toBe('the token endpoint refused the client: 401 Unauthorized: invalid_client (the client client-token-badclient is refused)');
    const task = await taskIn(db(), id, 'pending');
    expect(task.lastError).toBe(`not sent: ${paused!.reason}`);
    expect(closed.requests()).toEqual([]);
  });

  it('never logs, stores or shows the client secret or a token', async () => {
    const secrets = [CLIENT_SECRET, ...tokens.issued()];
    expect(secrets.length).toBeGreaterThan(5);
    const admin = adminApi(gateway.url);
    const answers = [
      await admin('/api/tasks?limit=200'),
      await admin('/api/destinations'),
      await admin('/api/deliveries?limit=200'),
      ...(await Promise.all((await admin('/api/tasks?limit=200')).json.items.map((t: { id: string }) => admin(`/api/tasks/${t.id}`)))),
    ];
    const tables = await rows<{ name: string }>(db(), sql`select table_name as name from information_schema.tables where table_schema = 'public'`);
    const dumps: string[] = [];
    for (const { name } of tables) {
      const [dump] = await rows<{ text: string | null }>(db(), sql.raw(`select string_agg(t::text, E'\\n') as text from "${name}" t`));
      dumps.push(dump?.text ?? '');
    }
    const seen = [JSON.stringify(logs.lines), ...answers.map((a) => JSON.stringify(a.json)), ...dumps].join('\n');
    expect(logs.lines.length).toBeGreaterThan(10);
    for (const secret of secrets) expect(seen, secret).not.toContain(secret);
  });
});
