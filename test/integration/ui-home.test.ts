import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminTokens } from '../../src/api/tokens.ts';
import { SESSION_COOKIE, signSession } from '../../src/ui/session.ts';
import { ADMIN_TOKEN, adminApi, ALL_TOKENS, setState, signedInDashboard } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

let gateway: TestGateway;
let dashboard: ReturnType<typeof signedInDashboard>;

beforeAll(async () => {
  // Web role: nothing forwards, so the tasks stay as the test puts them.
  gateway = await startTestGateway(shopConfig({ crm: { url: 'http://127.0.0.1:9/crm', idempotency: 'key' } }), { role: 'web', adminToken: ALL_TOKENS });
  dashboard = signedInDashboard(gateway.url);
  const first = shopifyDelivery({ eventId: 'home-1' });
  const answers = [await post(gateway.url, 'shop', first), await post(gateway.url, 'shop', first), await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'home-2' }))];
  await setState(gateway.store.db, answers[0]!.json.tasks[0].id, 'failed');
});
afterAll(async () => gateway?.close());

/** A totals table's rows, by key, from the page's HTML. */
function totals(html: string, id: string): Record<string, number> {
  const table = html.slice(html.indexOf(`id="${id}"`));
  const body = table.slice(0, table.indexOf('</tbody>'));
  return Object.fromEntries([...body.matchAll(/<tr data-key="([a-z_]+)">.*?<td class="num">([\d,]+)<\/td>/g)].map((m) => [m[1], Number(m[2]!.replaceAll(',', ''))]));
}

describe('the home page', () => {
  it('is where /ui leads', async () => {
    const cookie = `${SESSION_COOKIE}=${signSession(new AdminTokens(ADMIN_TOKEN), 'admin')}`;
    const answer = await fetch(`${gateway.url}/ui`, { redirect: 'manual', headers: { cookie } });
    expect(answer.status).toBe(303);
    expect(answer.headers.get('location')).toBe('/ui/home');
  });

  it('charts the hour and the day with the counts of /api/stats, and the queue as the attention page counts it', async () => {
    const stats = (await adminApi(gateway.url)('/api/stats')).json;
    expect(stats.decisions).toEqual({ accepted: 2, duplicate_delivery: 1 });
    for (const range of ['hour', 'day']) {
      const html = await dashboard(`/ui/home?range=${range}`);
      expect(totals(html, 'deliveries-numbers')).toEqual(stats.decisions);
      expect(totals(html, 'queue-numbers')).toMatchObject({ failed: 1, needs_review: 0 });
      expect(html).toContain(`<title id="deliveries-chart-title">Deliveries by decision, the last ${range}</title>`);
      expect(html).toContain('no attempts in this window');
    }
  });

  it('refuses a range it does not draw, naming the ones it does', async () => {
    expect(await dashboard('/ui/home?range=week', 400)).toMatch(/range: Invalid option: expected one of &quot;hour&quot;\|&quot;day&quot;/);
  });
});
