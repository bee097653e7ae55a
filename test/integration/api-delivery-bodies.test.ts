import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHOWN_BODY_BYTES } from '../../src/operate/delivery-body.ts';
import { purgeExpiredHeaders } from '../../src/store/retention.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { deliveriesView, deliveryView } from '../../src/cli/views.ts';
import { adminApi, ADMIN_TOKEN, followPages, signedInDashboard } from '../support/admin.ts';
import { post, SHOP_SECRET, shopifyDelivery } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

let gateway: TestGateway;
let api: ReturnType<typeof adminApi>;

beforeAll(async () => {
  const crm = { url: 'http://127.0.0.1:9/crm', idempotency: 'key', filter: { body: { email: { $neq: 'ignored@example.com' } } } };
  const source = { adapter: 'shopify', secrets: [SHOP_SECRET], actions: { crm } };
  gateway = await startTestGateway({ sources: { shop: source, outlet: source } }, { role: 'web', adminToken: ADMIN_TOKEN });
  api = adminApi(gateway.url);
});
afterAll(async () => {
  await gateway?.close();
});

const order = (fields: object) => JSON.stringify({ email: 'jon@example.com', total_price: '10.00', ...fields });
const send = async (source: string, body: string) => {
  const answer = await post(gateway.url, source, shopifyDelivery({ eventId: `e-${Math.random()}`, body }));
  expect(answer.status).toBe(200);
  return answer.json.receipt as string;
};
const view = async (receipt: string) => (await api(`/api/deliveries/${receipt}`)).json;
const keptBodies = async () => (await rowsOf<{ n: number }>(gateway.store.db, sql`select count(*)::int as n from delivery_bodies`))[0]!.n;

describe('GET /api/deliveries/{id}: the body it carried', () => {
  it('shows the bytes as text, with every action that made no task and why', async () => {
    const body = order({ id: 5, email: 'ignored@example.com', note: 'ünïcode' });
    const shown = await view(await send('shop', body));
    expect(shown).toMatchObject({ body, bodyEncoding: 'utf8', bodyTruncated: false, bodyPurged: false, bodyBytes: Buffer.byteLength(body) });
    expect(shown.skipped).toEqual([{ action: 'crm', reason: 'filtered', detail: expect.stringContaining('ignored@example.com') }]);
  });

  it("masks the config's credentials where the body quotes one", async () => {
    const shown = await view(await send('shop', order({ id: 6, echoed: `secret is ${SHOP_SECRET}!` })));
    expect(shown.body).toContain('"echoed":"secret is [redacted]!"');
    expect(shown.body).not.toContain(SHOP_SECRET);
  });

  it('cuts a body past the shown size, and says so', async () => {
    const body = order({ id: 7, padding: 'x'.repeat(SHOWN_BODY_BYTES * 2) });
    const shown = await view(await send('shop', body));
    expect(shown.bodyTruncated).toBe(true);
    expect(Buffer.byteLength(shown.body)).toBeLessThanOrEqual(SHOWN_BODY_BYTES);
    expect(body.startsWith(shown.body)).toBe(true);
    expect(shown.bodyBytes).toBe(Buffer.byteLength(body));
  });

  it("shows a sender's retry the first receipt's bytes without keeping them twice, and none once retention purged them", async () => {
    const body = order({ id: 8, email: 'ignored@example.com' });
    const delivery = shopifyDelivery({ eventId: `e-${Math.random()}`, body });
    const first = (await post(gateway.url, 'shop', delivery)).json.receipt as string;
    const kept = await keptBodies();
    const retry = await post(gateway.url, 'shop', delivery);
    expect(retry.json.decision).toBe('duplicate_delivery');
    expect(await keptBodies()).toBe(kept);
    expect((await view(retry.json.receipt)).body).toBe(body);

    // A filtered receipt holds no task body, so its headers and bytes go at the source's retention.
    await purgeExpiredHeaders(gateway.store.db, 'shop', 0, 1000);
    expect(await view(first)).toMatchObject({ body: null, bodyPurged: true, headers: null });
    expect(await view(retry.json.receipt)).toMatchObject({ body: null, bodyPurged: true });
  });
});

describe('GET /api/deliveries?match=', () => {
  const search = (query: string) => api(`/api/deliveries?${query}`);
  const match = (m: object) => `match=${encodeURIComponent(JSON.stringify(m))}`;
  const ids = (answer: { json: { items: { id: string }[] } }) => answer.json.items.map((item) => item.id);
  const marker = `m${Math.floor(Math.random() * 1e9)}`;
  const receipts: Record<string, string> = {};

  beforeAll(async () => {
    receipts.number = await send('shop', order({ id: 1001, marker }));
    receipts.money = await send('shop', order({ id: 1002, marker, total_price: '250.00' }));
    receipts.text = await send('shop', order({ id: '1001', marker, email: 'ignored@example.com' }));
    receipts.outlet = await send('outlet', order({ id: 1001, marker, line_items: [{ sku: 'A-1' }, { sku: 'B-2' }] }));
    receipts.other = await send('shop', order({ id: 2002, marker: `${marker}-other` }));
  });

  it('finds the receipts whose body matches, by the filter rules, newest first', async () => {
    expect(ids(await search(match({ body: { id: 1001, marker } })))).toEqual([receipts.outlet, receipts.text, receipts.number]);
    expect(ids(await search(match({ body: { id: '1001' } })))).toEqual([receipts.text]);
    expect(ids(await search(match({ body: { total_price: 250, marker } })))).toEqual([receipts.money]);
    expect(ids(await search(match({ body: { line_items: { sku: 'B-2' } } })))).toEqual([receipts.outlet]);
    expect(ids(await search(match({ body: { id: { $in: [1002, 2002] }, marker: { $startsWith: marker } } })))).toEqual([receipts.other, receipts.money]);
    // Operators no index answers are checked receipt by receipt.
    expect(ids(await search(match({ body: { marker, id: { $gt: 1001 } } })))).toEqual([receipts.money]);
    expect(ids(await search(match({ body: { marker }, headers: { 'x-shopify-topic': 'orders/create' } })))).toHaveLength(4);
  });

  it('combines with source, decision, limit and cursor', async () => {
    expect(ids(await search(`${match({ body: { id: 1001, marker } })}&source=outlet`))).toEqual([receipts.outlet]);
    expect(ids(await search(`${match({ body: { id: 1001, marker } })}&source=shop&decision=accepted`))).toEqual([receipts.text, receipts.number]);
    expect(ids(await search(`${match({ body: { marker } })}&decision=duplicate_event`))).toEqual([]);
    const pages = await followPages(api, `/api/deliveries?${match({ body: { marker: { $startsWith: marker } } })}&limit=2`, null);
    expect(pages.seen).toEqual([receipts.other, receipts.outlet, receipts.text, receipts.money, receipts.number]);
    const ascending = await followPages(api, `/api/deliveries?${match({ body: { id: 1001, marker } })}&limit=1&order=asc`, null);
    expect(ascending.seen).toEqual([receipts.number, receipts.text, receipts.outlet]);
  });

  it('answers 400 saying what is wrong with a match', async () => {
    const cases: [string, RegExp][] = [
      ['match=%7Bbody', /^match is not JSON/],
      [match({ body: { id: { $gtt: 5 } } }), /^match\.body\.id\.\$gtt: unknown operator "\$gtt"/],
      [match({ bodies: { id: 1 } }), /^match\.bodies: unknown key "bodies"/],
      [match({ body: { id: { $in: [] } } }), /\$in needs at least one value/],
      ['match=5', /^match: a filter is an object/],
    ];
    for (const [query, message] of cases) {
      const answer = await search(query);
      expect(answer.status, query).toBe(400);
      expect(answer.json.error.code).toBe('invalid_match');
      expect(answer.json.error.message, query).toMatch(message);
    }
  });

  it('reads the same on the CLI and the dashboard, whose search box says what is wrong with a filter', async () => {
    const shown = await view(receipts.money!);
    expect(deliveryView(shown)).toContain(`received:\n${order({ id: 1002, marker, total_price: '250.00' })}`);
    const found = (await search(match({ body: { total_price: 250, marker } }))).json;
    expect(deliveriesView(found)).toContain(receipts.money);
    const dashboard = signedInDashboard(gateway.url);
    const page = await dashboard(`/ui/deliveries/${receipts.money}`);
    expect(page).toContain('<h2>Body received</h2>');
    expect(page).toContain(`&quot;marker&quot;:&quot;${marker}&quot;`);
    const listed = await dashboard(`/ui/deliveries?${match({ body: { total_price: 250, marker } })}`);
    expect(listed).toContain(receipts.money);
    expect(listed).not.toContain(receipts.number);
    const refused = await dashboard(`/ui/deliveries?${match({ body: { id: { $gtt: 1 } } })}`);
    expect(refused).toContain('unknown operator');
  });
});
