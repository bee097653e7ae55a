import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminApi } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

let gateway: TestGateway;

beforeAll(async () => {
  const config = shopConfig();
  Object.assign(config.sources, {
    whatsapp: { adapter: 'meta', secrets: ['meta-app-secret'], verifyToken: 'meta-verify-token', actions: { inbox: { url: 'http://127.0.0.1:9/inbox' } } },
  });
  gateway = await startTestGateway(config, { role: 'web', adminToken: ADMIN_TOKEN });
});
afterAll(async () => gateway?.close());

describe('X-Content-Type-Options: nosniff', () => {
  it('is on every answer: an echoed challenge, deliveries, the API, the dashboard, probes, errors and 404s', async () => {
    // Meta's handshake sends its challenge back as it came: text a stranger chose, which a browser must not sniff.
    const challenge = encodeURIComponent('<script>alert(1)</script>');
    const echoed = await fetch(`${gateway.url}/in/whatsapp?hub.mode=subscribe&hub.challenge=${challenge}&hub.verify_token=meta-verify-token`);
    expect([echoed.status, await echoed.text()]).toEqual([200, '<script>alert(1)</script>']);
    expect(echoed.headers.get('x-content-type-options')).toBe('nosniff');

    const delivered = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'nosniff-1' }));
    const forged = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'nosniff-2', secret: 'not-the-secret' }));
    expect([delivered.status, forged.status]).toEqual([200, 401]);
    for (const answer of [delivered, forged]) expect(answer.headers.get('x-content-type-options')).toBe('nosniff');

    const api = adminApi(gateway.url);
    const answers = [
      await api('/api/stats'),
      await api('/api/stats', { token: 'wrong-token' }),
      await api('/api/tasks/t_0'),
      await api('/api/tasks/t_0/approve', { body: '{not json' }),
    ];
    expect(answers.map((a) => a.status)).toEqual([200, 401, 404, 400]);
    for (const answer of answers) expect(answer.headers.get('x-content-type-options')).toBe('nosniff');

    for (const [path, status] of [['/ui/login', 200], ['/ui/style.css', 200], ['/ui/home', 303], ['/healthz', 200], ['/readyz', 200], ['/metrics', 200], ['/nowhere', 404], ['/in/nobody', 404]] as const) {
      const answer = await fetch(`${gateway.url}${path}`, { redirect: 'manual', method: path.startsWith('/in/') ? 'POST' : 'GET' });
      expect([path, answer.status]).toEqual([path, status]);
      expect([path, answer.headers.get('x-content-type-options')]).toEqual([path, 'nosniff']);
      await answer.arrayBuffer();
    }
  });
});
