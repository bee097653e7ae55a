/**
 * What a client that holds no secret, or replays what it captured, can make the database keep, on both engines,
 * measured as the database's own size: unsigned pings and forged requests write nothing, a replayed handshake
 * nothing more, a replayed batch its headers once per request, and a batch past `maxBatchItems` nothing at all.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/store/rows.ts';
import { ADMIN_TOKEN, adminApi } from '../support/admin.ts';
import { post, type Delivery } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { metaDelivery, slackDelivery, twitchDelivery, woocommerceDelivery, zoomDelivery } from '../support/signers.ts';

const SLACK_SECRET = 'slack-signing-secret-for-tests';
const TWITCH_SECRET = 'twitch-subscription-secret';
const ZOOM_SECRET = 'zoom-secret-token';
const META_SECRET = 'meta-app-secret';
const VERIFY_TOKEN = 'meatyhamhock';
const WC_SECRET = 'wc-secret-for-tests';
const MiB = 1024 * 1024;
// The figures with ONCEHOOK_TEST_FULL=1; `npm test` sends a quarter of the requests and replays a batch twice,
// under bounds scaled to match (the pings' and forgeries' bound is a fixed 2 MiB either way).
const FULL = process.env.ONCEHOOK_TEST_FULL === '1';
const [PINGS, FORGED, HANDSHAKE_REPLAYS, BATCH_REPLAYS] = FULL ? [1000, 200, 50, 10] : [250, 50, 15, 2];
let gateway: TestGateway;

beforeAll(async () => {
  // Web role: nothing is forwarded, so only ingest writes while sizes are measured.
  const action = { url: 'http://127.0.0.1:9/none' };
  gateway = await startTestGateway(
    {
      sources: {
        store: { adapter: 'woocommerce', secrets: [WC_SECRET], actions: { fulfil: action } },
        slack: { adapter: 'slack', secrets: [SLACK_SECRET], actions: { bot: action } },
        stream: { adapter: 'twitch', secrets: [TWITCH_SECRET], actions: { followers: action } },
        meetings: { adapter: 'zoom', secrets: [ZOOM_SECRET], actions: { minutes: action } },
        whatsapp: { adapter: 'meta', secrets: [META_SECRET], verifyToken: VERIFY_TOKEN, actions: { inbox: action } },
      },
    },
    { role: 'web', adminToken: ADMIN_TOKEN },
  );
});
afterAll(async () => gateway?.close());

const rows = <T>(query: ReturnType<typeof sql>) => rowsOf<T>(gateway.store.db, query);
const databaseBytes = async () => Number((await rows<{ n: string }>(sql`select pg_database_size(current_database())::text as n`))[0]!.n);
/** The rows ingest writes: receipts, their keys, tasks. */
const ingestRows = async () =>
  (
    await rows<{ n: number }>(sql`select ((select count(*) from deliveries) + (select count(*) from delivery_keys)
      + (select count(*) from event_keys) + (select count(*) from tasks))::int as n`)
  )[0]!.n;
const receiptsOf = async (source: string) => (await rows<{ n: number }>(sql`select count(*)::int as n from deliveries where source = ${source}`))[0]!.n;

/** About 12 KB of headers no sender sends, different on every call so that nothing in them compresses or repeats. */
const junk = (): Record<string, string> => Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`x-junk-${i}`, randomBytes(750).toString('base64')]));

async function send(n: number, concurrency: number, request: (i: number) => Promise<number>): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) statuses.push(await request(next++));
    }),
  );
  return statuses;
}

const postRaw = async (source: string, delivery: Delivery, headers: Record<string, string> = {}) => {
  const response = await fetch(`${gateway.url}/in/${source}`, { method: 'POST', headers: { ...delivery.headers, ...headers }, body: delivery.body });
  await response.arrayBuffer();
  return response.status;
};

describe('what an anonymous client costs', () => {
  it('unsigned pings, forged requests and replays of a handshake grow the database by at most 2 MiB and one receipt', async () => {
    const [bytesBefore, rowsBefore] = [await databaseBytes(), await ingestRows()];
    const ping: Delivery = { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'webhook_id=7' };
    expect(new Set(await send(PINGS, 16, () => postRaw('store', ping, junk())))).toEqual(new Set([200]));
    const forged = [woocommerceDelivery('not-the-secret', 'order.created', { id: 1 }), slackDelivery('not-the-secret', { type: 'event_callback', event_id: 'Ev1' })];
    expect(new Set(await send(FORGED, 16, (i) => postRaw(i % 2 ? 'store' : 'slack', forged[i % 2]!, junk())))).toEqual(new Set([401]));
    const check = slackDelivery(SLACK_SECRET, { token: 't', challenge: 'ch-replayed', type: 'url_verification' });
    const answers = await send(HANDSHAKE_REPLAYS + 1, 4, async () => {
      const response = await fetch(`${gateway.url}/in/slack`, { method: 'POST', headers: { ...check.headers, ...junk() }, body: check.body });
      expect(await response.json()).toEqual({ challenge: 'ch-replayed' });
      return response.status;
    });
    expect(new Set(answers)).toEqual(new Set([200]));

    const grown = (await databaseBytes()) - bytesBefore;
    expect(grown, `grew ${(grown / MiB).toFixed(2)} MiB`).toBeLessThanOrEqual(2 * MiB);
    // The handshake's receipt and its delivery key; nothing of the pings nor of the forgeries.
    expect(await ingestRows()).toBe(rowsBefore + 2);
    expect(await receiptsOf('store')).toBe(0);
    const [handshake] = (await adminApi(gateway.url)('/api/deliveries?source=slack')).json.items;
    expect(handshake.decision).toBe('handshake');
    const scrape = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(scrape).toMatch(new RegExp(`^oncehook_rejections_total\\{source="store",reason="unsigned_ping"\\} ${PINGS}$`, 'm'));
    expect(scrape).toMatch(new RegExp(`^oncehook_deliveries_total\\{source="slack",decision="duplicate_delivery"\\} ${HANDSHAKE_REPLAYS}$`, 'm'));
  });

  it("a replayed handshake of Twitch, Zoom and Meta's GET is answered each time and recorded once", async () => {
    const subscription = { id: 'sub-1', status: 'webhook_callback_verification_pending', type: 'channel.follow', version: '2', condition: {} };
    const twitch = twitchDelivery(TWITCH_SECRET, 'webhook_callback_verification', { challenge: 'twitch-challenge', subscription }, 'tw-hs-replayed');
    const zoom = zoomDelivery(ZOOM_SECRET, { event: 'endpoint.url_validation', event_ts: Date.now(), payload: { plainToken: 'zoom-plain' } });
    const metaCheck = `${gateway.url}/in/whatsapp?hub.mode=subscribe&hub.challenge=meta-challenge&hub.verify_token=${VERIFY_TOKEN}`;
    for (let i = 0; i < 10; i++) {
      expect(await postRaw('stream', twitch)).toBe(200);
      expect((await post(gateway.url, 'meetings', zoom)).json.plainToken).toBe('zoom-plain');
      expect(await (await fetch(metaCheck)).text()).toBe('meta-challenge');
    }
    for (const source of ['stream', 'meetings', 'whatsapp']) expect(await receiptsOf(source), source).toBe(1);
  });

  it('replays of a 1,000-event batch cost its headers once per request, not once per event; each receipt shows them', async () => {
    const batch = (name: string) =>
      metaDelivery(META_SECRET, {
        object: 'whatsapp_business_account',
        entry: Array.from({ length: 1000 }, (_, i) => ({
          id: 'waba-1',
          changes: [{ field: 'messages', value: { messages: [{ id: `wamid.${name}.${i}`, timestamp: '1764669600', text: { body: 'hi' } }] } }],
        })),
      });
    const replayed = async (delivery: Delivery, headers: () => Record<string, string>) => {
      const before = await databaseBytes();
      for (let i = 0; i <= BATCH_REPLAYS; i++) expect(await postRaw('whatsapp', delivery, headers())).toBe(200);
      return (await databaseBytes()) - before;
    };
    const bare = await replayed(batch('bare'), () => ({}));
    const junked = await replayed(batch('junked'), junk);
    // At most 5 MiB for ten replays (eleven requests), where every event kept its own copy of 12 KB before: 77 MiB.
    const bound = (5 * MiB * (BATCH_REPLAYS + 1)) / 11;
    expect(junked - bare, `junk headers cost ${((junked - bare) / MiB).toFixed(2)} MiB more`).toBeLessThanOrEqual(bound);

    // One stored copy per request: the first receipt of each; every receipt still shows them.
    const [stored] = await rows<{ holders: number; events: number }>(
      sql`select count(*) filter (where headers is not null)::int as holders, count(*)::int as events
          from deliveries where source = 'whatsapp' and event_id like 'wamid.junked.%'`,
    );
    expect(stored).toEqual({ holders: BATCH_REPLAYS + 1, events: (BATCH_REPLAYS + 1) * 1000 });
    const [later] = (await adminApi(gateway.url)('/api/deliveries?source=whatsapp&limit=1')).json.items;
    const view = (await adminApi(gateway.url)(`/api/deliveries/${later.id}`)).json;
    expect(view.eventId).toMatch(/^wamid\.junked\./);
    expect(view.eventId).not.toBe('wamid.junked.0');
    expect(view.headers['x-junk-0']).toMatch(/^[A-Za-z0-9+/]{1000}$/);
    expect(view.headers['x-hub-signature-256']).toBe('[redacted]');
  });

  it('a batch past maxBatchItems is refused 413 too_many_items at once, recording nothing', async () => {
    const oversized = metaDelivery(META_SECRET, {
      object: 'page',
      entry: Array.from({ length: 5000 }, (_, i) => ({ id: `page-${i}`, time: 1764669600, changes: [{ field: 'feed', value: { i } }] })),
    });
    const [rowsBefore, receiptsBefore] = [await ingestRows(), await receiptsOf('whatsapp')];
    const started = performance.now();
    const answer = await post(gateway.url, 'whatsapp', oversized);
    const took = performance.now() - started;
    expect(answer.status).toBe(413);
    expect(answer.json.error.code).toBe('too_many_items');
    expect(answer.json.error.message).toMatch(/carries 5000 events; this source takes at most 1000/);
    expect(took).toBeLessThanOrEqual(2000);
    expect([await ingestRows(), await receiptsOf('whatsapp')]).toEqual([rowsBefore, receiptsBefore]);
    const scrape = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(scrape).toMatch(/^oncehook_rejections_total\{source="whatsapp",reason="too_many_items"\} 1$/m);
  });
});
