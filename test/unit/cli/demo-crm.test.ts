import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startDemoDownstream } from '../../../src/cli/demo-downstream.ts';
import { BIN, REPO, exitOf } from '../../support/process.ts';

const TOKEN = 'test-crm-token-7f3a';
const CONTACT = { email: 'ada@example.com', name: 'Ada Lovelace', external_id: 'tk_1' };

let server: Awaited<ReturnType<typeof startDemoDownstream>>;
let lines: string[];

async function start(perSecond: number) {
  lines = [];
  vi.spyOn(console, 'log').mockImplementation((line: string) => void lines.push(line));
  server = await startDemoDownstream({ port: 0, host: '127.0.0.1', crm: { token: TOKEN, perSecond } });
}

async function stop() {
  await server.close();
  vi.restoreAllMocks();
  // Whatever a test sent, no line printed the token.
  for (const line of lines) expect(line).not.toContain(TOKEN);
}

/** One valid request; each negative test breaks exactly one thing of it. */
function call(options: { method?: string; path?: string; authorization?: string | null; key?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'oncehook-task-id': 'tk_1', 'oncehook-attempt': '1' };
  const authorization = options.authorization === undefined ? `Bearer ${TOKEN}` : options.authorization;
  if (authorization !== null) headers.authorization = authorization;
  if (options.key !== undefined) headers['idempotency-key'] = options.key;
  const method = options.method ?? 'POST';
  const body = method === 'GET' ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body ?? CONTACT);
  return fetch(`${server.url}${options.path ?? '/crm/contacts'}`, { method, headers, body });
}

describe('the demo CRM under /crm/contacts', () => {
  beforeEach(() => start(1000));
  afterEach(stop);

  it('answers 401 without the bearer token, and never prints one', async () => {
    for (const authorization of [null, 'Bearer wrong-token', `Basic ${TOKEN}`, TOKEN]) {
      const response = await call({ authorization });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer realm="demo-crm"');
      expect(await response.json()).toMatchObject({ error: 'unauthorized' });
    }
    expect(lines).toEqual([
      'POST /crm/contacts task=tk_1 attempt=1 → 401 no token',
      ...Array(3).fill('POST /crm/contacts task=tk_1 attempt=1 → 401 wrong token'),
    ]);
    // RFC 7235: the scheme's name is taken in any case.
    expect((await call({ authorization: `bearer ${TOKEN}` })).status).toBe(201);
  });

  it.each([
    ['an email without @', { ...CONTACT, email: 'ada.example.com' }, 'email'],
    ['no name', { email: CONTACT.email, external_id: 'tk_1' }, 'name'],
    ['an empty name', { ...CONTACT, name: ' ' }, 'name'],
    ['a numeric external_id', { ...CONTACT, external_id: 1 }, 'external_id'],
    ['tags that are not strings', { ...CONTACT, tags: [1] }, 'tags.0'],
    ['a field a contact does not have', { ...CONTACT, emial: CONTACT.email }, 'emial'],
    ['a list, not an object', [CONTACT], '(body)'],
  ])('answers 422 naming the field for %s, and makes no contact', async (_, body, field) => {
    const response = await call({ body, key: 'k-invalid' });
    expect(response.status).toBe(422);
    expect(await response.json()).toEqual({ error: 'invalid_contact', fields: [{ field, problem: expect.any(String) }] });
    expect(await (await call({ method: 'GET' })).json()).toEqual({ results: [] });
    // A 422 is not kept under its key: the corrected request goes through.
    expect((await call({ key: 'k-invalid' })).status).toBe(201);
  });

  it('answers 400 for a body that is not JSON', async () => {
    const response = await call({ body: '{"email":' });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: 'invalid_json' });
  });

  it('creates a contact with 201, and answers a repeated Idempotency-Key with the same one', async () => {
    const first = await call({ key: 'task-1' });
    expect(first.status).toBe(201);
    const contact = await first.json();
    expect(contact).toEqual({ id: 'ct_1', ...CONTACT, created_at: expect.any(String), updated_at: expect.any(String) });

    const repeat = await call({ key: 'task-1' });
    expect(repeat.status).toBe(201);
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    expect(await repeat.json()).toEqual(contact);
    expect((await (await call({ method: 'GET' })).json()).results).toHaveLength(1);
    expect(lines.slice(-3, -1)).toEqual([
      'POST /crm/contacts task=tk_1 attempt=1 → 201 created ct_1',
      'POST /crm/contacts task=tk_1 attempt=1 → 201 replayed: created ct_1',
    ]);

    // The same key on other bytes is a client's mistake, not a retry.
    const reused = await call({ key: 'task-1', body: { ...CONTACT, name: 'Ada King' } });
    expect(reused.status).toBe(422);
    expect(await reused.json()).toMatchObject({ error: 'idempotency_key_reused' });
    // A new key with a known external_id is refused, as a CRM's unique external ID field refuses it: not with a
    // 409, which oncehook would try again.
    const again = await call({ key: 'task-2' });
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ error: 'contact_exists', id: 'ct_1' });
  });

  // What a lookup object's `found: {"results": {"external_id": {"$exist": true}}}` tells apart: 200 either way.
  it('searches by external_id: 200 with an empty list, then with the contact', async () => {
    const search = () => call({ method: 'GET', path: '/crm/contacts?external_id=tk_1' });
    const before = await search();
    expect(before.status).toBe(200);
    expect(await before.json()).toEqual({ results: [] });
    await call({ body: { ...CONTACT, external_id: 'tk_other' } });
    expect(await (await search()).json()).toEqual({ results: [] });

    await call();
    const after = await search();
    expect(after.status).toBe(200);
    expect(await after.json()).toEqual({ results: [expect.objectContaining({ id: 'ct_2', external_id: 'tk_1' })] });
    expect(lines.at(-1)).toBe('GET /crm/contacts?external_id=tk_1 task=tk_1 attempt=1 → 200 1 found');
  });

  it('PUT /crm/contacts/{external_id} creates with 201, then updates the same contact with 200', async () => {
    const { external_id: _, ...fields } = CONTACT;
    const created = await call({ method: 'PUT', path: '/crm/contacts/tk_9', body: fields });
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({ id: 'ct_1', external_id: 'tk_9' });
    const updated = await call({ method: 'PUT', path: '/crm/contacts/tk_9', body: { ...fields, name: 'Ada King' } });
    expect(updated.status).toBe(200);
    expect(await updated.json()).toMatchObject({ id: 'ct_1', name: 'Ada King' });

    const elsewhere = await call({ method: 'PUT', path: '/crm/contacts/tk_9', body: { ...fields, external_id: 'tk_8' } });
    expect(elsewhere.status).toBe(422);
    const patch = await call({ method: 'PATCH', path: '/crm/contacts/tk_9', body: fields });
    expect(patch.status).toBe(405);
    expect(patch.headers.get('allow')).toBe('PUT');
  });

  it('leaves every other path the open effect recorder, the example config’s /crm/tasks among them', async () => {
    const response = await call({ path: '/crm/tasks', authorization: null, body: '{"id": 1}' });
    expect(response.status).toBe(201);
    expect(await response.json()).toMatchObject({ id: 'demo_1', path: '/crm/tasks' });
  });
});

describe('the demo CRM’s rate limit', () => {
  beforeEach(() => start(3));
  afterEach(stop);

  it('answers 429 with Retry-After: 1 past the rate, and admits again a second later', async () => {
    const statuses = await Promise.all(Array.from({ length: 4 }, () => call({ method: 'GET' }).then((r) => r.status)));
    expect(statuses.sort()).toEqual([200, 200, 200, 429]);
    const refused = await call({ method: 'GET' });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({ error: 'rate_limited' });
    expect(lines.at(-1)).toBe('GET /crm/contacts task=tk_1 attempt=1 → 429 rate limited');

    await sleep(1000);
    expect((await call({ method: 'GET' })).status).toBe(200);
  });
});

describe('oncehook demo-downstream', () => {
  it('says where the CRM token came from, never the token itself', async () => {
    const child = spawn(process.execPath, [BIN, 'demo-downstream', '--port', '0', '--crm-rate', '7'], {
      cwd: REPO,
      env: { ...process.env, CRM_TOKEN: TOKEN },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          output += chunk.toString();
          if (output.includes('demo CRM on')) resolve();
        });
        child.once('exit', () => reject(new Error(`demo-downstream exited: ${output}`)));
      });
    } finally {
      child.kill();
      await exitOf(child);
    }
    expect(output).toMatch(/demo CRM on http:\/\/127\.0\.0\.1:\d+\/crm\/contacts: .*Bearer <the one in CRM_TOKEN>; 7 requests a second/);
    expect(output).not.toContain(TOKEN);
  });
});
