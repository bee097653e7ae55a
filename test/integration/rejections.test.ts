import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejectionsView } from '../../src/cli/views.ts';
import { createLogger } from '../../src/log.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { MINUTES_KEPT, RejectionLog, SAMPLES_KEPT } from '../../src/store/rejection-log.ts';
import { adminApi, ADMIN_TOKEN, signedInDashboard } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { engine } from '../support/engine.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

let gateway: TestGateway;
let api: ReturnType<typeof adminApi>;

beforeAll(async () => {
  gateway = await startTestGateway(shopConfig(undefined, { maxBodyBytes: 1024 }), { role: 'web', adminToken: ADMIN_TOKEN, rejectionFlushMs: 100 });
  api = adminApi(gateway.url);
});
afterAll(async () => {
  await gateway?.close();
});

/** The 10,000 with ONCEHOOK_TEST_FULL=1; a tenth of them in `npm test`. */
const FORGED = process.env.ONCEHOOK_TEST_FULL === '1' ? 10_000 : 1_000;
const SECRET_MARK = 'body-that-must-not-be-kept';

const rowCount = async (table: 'rejection_counts' | 'rejection_samples') =>
  (await rowsOf<{ n: number }>(gateway.store.db, sql`select count(*)::int as n from ${sql.identifier(table)}`))[0]!.n;

type Tally = { source: string; reason: string; total: number; minutes: { minute: string; count: number }[]; samples: any[] };

/** The answer once `done` holds of it: the gateway adds what it counted every 100 ms. */
async function rejectionsWhen(query: string, done: (items: Tally[]) => boolean) {
  for (let tries = 0; ; tries++) {
    const answer = (await api(`/api/rejections${query}`)).json;
    if (done(answer.items) || tries > 200) return answer;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
const totalOf = (items: Tally[]) => items.reduce((n, item) => n + item.total, 0);
const signatures = (items: Tally[]) => items.find((item) => item.reason === 'invalid_signature')?.total ?? 0;

describe('GET /api/rejections', () => {
  it('counts refused requests per source and reason, with a few samples: no body, no header value', async () => {
    const forged = shopifyDelivery({ eventId: 'forged', body: JSON.stringify({ note: SECRET_MARK }), secret: 'not-the-secret' });
    const hmac = forged.headers['x-shopify-hmac-sha256']!;
    for (let sent = 0; sent < FORGED; sent += 50) {
      const answers = await Promise.all(Array.from({ length: 50 }, () => post(gateway.url, 'shop', forged)));
      expect(answers.every((a) => a.status === 401)).toBe(true);
    }
    const { 'x-shopify-hmac-sha256': _, ...unsigned } = forged.headers;
    expect((await post(gateway.url, 'shop', { headers: unsigned, body: forged.body })).status).toBe(401);
    expect((await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'big', body: JSON.stringify({ pad: 'x'.repeat(2000) }) }))).status).toBe(413);
    expect((await post(gateway.url, 'nowhere', forged)).status).toBe(404);

    const answer = await rejectionsWhen('', (items) => totalOf(items) >= FORGED + 3);
    const byReason = Object.fromEntries(answer.items.map((item: Tally) => [`${item.source} ${item.reason}`, item.total]));
    expect(byReason).toEqual({ 'shop invalid_signature': FORGED, 'shop missing_header': 1, 'shop body_too_large': 1, '(unknown) unknown_source': 1 });

    const forgeries = answer.items.find((item: Tally) => item.reason === 'invalid_signature');
    expect(forgeries.samples).toHaveLength(SAMPLES_KEPT);
    expect(forgeries.samples[0]).toMatchObject({ reason: 'invalid_signature', remoteAddress: expect.stringContaining('127.0.0.1') });
    expect(forgeries.samples[0].headerNames).toEqual(expect.arrayContaining(['x-shopify-hmac-sha256', 'x-shopify-topic']));
    expect(forgeries.minutes.reduce((n: number, m: { count: number }) => n + m.count, 0)).toBe(FORGED);
    const stored = JSON.stringify(await rowsOf(gateway.store.db, sql`select * from rejection_samples`));
    for (const kept of [JSON.stringify(answer), stored]) {
      expect(kept).not.toContain(SECRET_MARK);
      expect(kept).not.toContain(hmac);
      expect(kept).not.toContain('orders/create');
    }

    // Bounded: a row per source, reason and minute; a few samples per pair. A run may straddle a minute.
    expect(await rowCount('rejection_counts')).toBeLessThanOrEqual(4 * 2);
    expect(await rowCount('rejection_samples')).toBeLessThanOrEqual(4 * SAMPLES_KEPT);

    expect((await api('/api/rejections?source=nowhere')).json.items).toEqual([]);
    expect((await api('/api/rejections?since=2h&source=shop')).json.items).toHaveLength(3);
    expect((await api('/api/rejections?since=yesterday-ish')).status).toBe(400);

    const cli = rejectionsView(answer);
    expect(cli).toMatch(/shop +invalid_signature +\d+/);
    expect(cli).toContain('x-shopify-hmac-sha256');
    const html = await signedInDashboard(gateway.url)('/ui/rejections');
    expect(html).toContain('<code>invalid_signature</code>');
    expect(html).toContain('Refused requests');
  });

  it('keeps a day of minutes and the newest samples, whatever was counted; several processes add up', async () => {
    const quiet = createLogger('silent');
    const logs = [new RejectionLog(gateway.store, quiet, 1000, 60_000), new RejectionLog(gateway.store, quiet, 1000, 60_000)];
    const now = Date.now();
    // Three days of one refusal a minute, split between two processes.
    for (let minute = 3 * MINUTES_KEPT - 1; minute >= 0; minute--) {
      logs[minute % 2]!.note('shop', 'stale_timestamp', { remoteAddress: '192.0.2.1', headerNames: ['x-a'] }, now - minute * 60_000);
    }
    logs[1]!.note('shop', 'stale_timestamp', { remoteAddress: '192.0.2.2', headerNames: ['x-b'] }, now);
    for (const log of logs) await log.stop();
    const [row] = await rowsOf<{ minutes: number; refused: number }>(
      gateway.store.db,
      sql`select count(*)::int as minutes, sum(count)::int as refused from rejection_counts where reason = 'stale_timestamp'`,
    );
    expect(row!.minutes).toBeLessThanOrEqual(MINUTES_KEPT + 1);
    expect(row!.minutes).toBeGreaterThanOrEqual(MINUTES_KEPT - 1);
    // The minute of now holds both processes' refusals.
    const latest = (await api('/api/rejections?since=1m')).json.items.find((item: Tally) => item.reason === 'stale_timestamp');
    expect(latest.minutes.at(-1).count).toBe(2);
    const [samples] = await rowsOf<{ n: number }>(gateway.store.db, sql`select count(*)::int as n from rejection_samples where reason = 'stale_timestamp'`);
    expect(samples!.n).toBe(SAMPLES_KEPT);
  });

  // Two gateways on one database: a server, not the single-process embedded PGlite.
  if (engine() === 'postgres') it('adds up the counts of two gateways on one database', async () => {
    const other = await startTestGateway(shopConfig(), { role: 'web', database: gateway.database, rejectionFlushMs: 100 });
    try {
      const before = signatures((await api('/api/rejections?source=shop')).json.items);
      const forged = shopifyDelivery({ eventId: 'forged-twice', secret: 'not-the-secret' });
      await Promise.all([post(gateway.url, 'shop', forged), post(other.url, 'shop', forged), post(other.url, 'shop', forged)]);
      const after = await rejectionsWhen('?source=shop', (items) => signatures(items) >= before + 3);
      expect(signatures(after.items)).toBe(before + 3);
    } finally {
      await other.close();
    }
  });
});
