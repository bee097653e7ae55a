import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

const TOKEN = 'api-test-token';
let gateway: TestGateway;
let off: TestGateway;

beforeAll(async () => {
  const config = shopConfig({ gated: { url: 'http://127.0.0.1:9/gated', approval: 'required' } });
  // Web role: approved tasks stay pending, so the answers below do not race the forwarder.
  [gateway, off] = await Promise.all([
    startTestGateway(config, { role: 'web', adminToken: TOKEN }),
    startTestGateway(config, { role: 'web' }),
  ]);
});
afterAll(async () => {
  await Promise.all([gateway?.close(), off?.close()]);
});

function api(path: string, init: RequestInit & { token?: string | null } = {}) {
  const headers = new Headers(init.headers);
  if (init.token !== null) headers.set('authorization', `Bearer ${init.token ?? TOKEN}`);
  if (init.body) headers.set('content-type', 'application/json');
  return fetch(`${gateway.url}${path}`, { ...init, headers });
}

async function gatedTask(): Promise<string> {
  const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: `gated-${Math.random()}` }));
  return answer.json.tasks[0].id;
}

describe('admin API for forwarding', () => {
  it('is off, and says how to turn it on, without ONCEHOOK_ADMIN_TOKEN', async () => {
    const response = await fetch(`${off.url}/api/tasks/t_x`);
    expect(response.status).toBe(404);
    expect((await response.json()).error).toMatchObject({ code: 'admin_api_off', message: expect.stringMatching(/ONCEHOOK_ADMIN_TOKEN/) });
  });

  it('answers 401 without the bearer token or with a wrong one', async () => {
    const id = await gatedTask();
    expect((await api(`/api/tasks/${id}`, { token: null })).status).toBe(401);
    const wrong = await api(`/api/tasks/${id}`, { token: `${TOKEN}x` });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  it('GET /api/tasks/{id}: the task, its run ledger and its operator actions', async () => {
    const id = await gatedTask();
    const response = await api(`/api/tasks/${id}`);
    expect(response.status).toBe(200);
    const view = await response.json();
    expect(view).toMatchObject({ id, state: 'awaiting_approval', attempts: 0, ledger: [], operatorActions: [] });
    // The bytes a person approves, as text; the default delivery's body, sent as received.
    expect(view.body).toEqual({ text: JSON.stringify({ id: 450789469, email: 'jon@example.com', total_price: '10.00' }), truncated: false });
    expect(view.bodyBytes).toBe(view.body.text.length);
    expect((await api('/api/tasks/t_unknown')).status).toBe(404);
  });

  it('approve needs a note, moves the task to pending once, and records who decided what', async () => {
    const id = await gatedTask();
    const noNote = await api(`/api/tasks/${id}/approve`, { method: 'POST', body: JSON.stringify({ note: '  ' }) });
    expect(noNote.status).toBe(400);
    expect((await noNote.json()).error.message).toMatch(/note/);

    const approved = await api(`/api/tasks/${id}/approve`, { method: 'POST', body: JSON.stringify({ note: 'looks right' }) });
    expect(approved.status).toBe(200);
    const view = await approved.json();
    expect(view.state).toBe('pending');
    expect(view.operatorActions).toMatchObject([{ kind: 'approve', note: 'looks right', detail: { bodySha256: view.bodySha256 } }]);

    const again = await api(`/api/tasks/${id}/approve`, { method: 'POST', body: JSON.stringify({ note: 'twice' }) });
    expect(again.status).toBe(409);
    expect((await again.json()).error.code).toBe('not_awaiting_approval');
    expect((await api('/api/tasks/t_unknown/approve', { method: 'POST', body: JSON.stringify({ note: 'x' }) })).status).toBe(404);
  });
});
