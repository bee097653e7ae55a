/**
 * The twitch, zoom and meta adapters through the real server, on both engines: each sender's handshake answered as
 * it expects and recorded as a handshake with no task, and Meta's entry[] made one event per entry.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminApi } from '../support/admin.ts';
import { post } from '../support/deliveries.ts';
import type { Downstream } from '../support/downstream.ts';
import { taskIn, waitFor } from '../support/forwarding.ts';
import type { TestGateway } from '../support/gateway.ts';
import { startSenderGateway } from '../support/sender-gateway.ts';
import { metaDelivery, twitchDelivery, zoomDelivery } from '../support/signers.ts';

const TWITCH_SECRET = 'twitch-subscription-secret';
const ZOOM_SECRET = 'zoom-secret-token';
const META_SECRET = 'meta-app-secret';
const VERIFY_TOKEN = 'meatyhamhock';
let gateway: TestGateway;
let downstream: Downstream;

beforeAll(async () => {
  ({ gateway, downstream } = await startSenderGateway((action) => ({
    stream: { adapter: 'twitch', secrets: [TWITCH_SECRET], actions: { followers: action('/followers') } },
    meetings: { adapter: 'zoom', secrets: [ZOOM_SECRET], actions: { minutes: action('/minutes') } },
    whatsapp: { adapter: 'meta', secrets: [META_SECRET], verifyToken: VERIFY_TOKEN, actions: { inbox: { ...action('/inbox'), topics: ['messages'] } } },
  })));
});
afterAll(async () => {
  await gateway?.close();
  await downstream?.close();
});

const api = () => adminApi(gateway.url);
const handshakes = async (source: string) => (await api()(`/api/deliveries?source=${source}&decision=handshake`)).json.items;

async function expectNoTasks(receipts: { id: string }[]): Promise<void> {
  for (const receipt of receipts) expect((await api()(`/api/deliveries/${receipt.id}`)).json.tasks).toEqual([]);
}

describe('twitch', () => {
  const subscription = { id: 'f1c2a387-161a-49f9-a165-0f21d7a4e1c4', status: 'enabled', type: 'channel.follow', version: '1', cost: 1, condition: { broadcaster_user_id: '12826' } };

  it('answers webhook_callback_verification with the bare challenge as text/plain, records it as a handshake, and refuses a forged one', async () => {
    const check = twitchDelivery(TWITCH_SECRET, 'webhook_callback_verification', { challenge: 'pogchamp-kappa-360noscope-vohiyo', subscription }, 'tw-challenge-1');
    const response = await fetch(`${gateway.url}/in/stream`, { method: 'POST', headers: check.headers, body: check.body });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await response.text()).toBe('pogchamp-kappa-360noscope-vohiyo');
    const recorded = await handshakes('stream');
    expect(recorded).toHaveLength(1);
    await expectNoTasks(recorded);
    const forged = twitchDelivery('not-the-subscription-secret', 'webhook_callback_verification', { challenge: 'x', subscription }, 'tw-challenge-2');
    expect((await post(gateway.url, 'stream', forged)).status).toBe(401);
  });

  it('deduplicates a notification Twitch resends under its message ID, and gives a revocation no task', async () => {
    const follow = { subscription, event: { user_id: '1337', broadcaster_user_id: '12826', followed_at: '2026-12-02T10:00:00.1Z' } };
    const first = await post(gateway.url, 'stream', twitchDelivery(TWITCH_SECRET, 'notification', follow, 'tw-msg-1'));
    expect(first.json).toMatchObject({ decision: 'accepted', deliveryId: 'tw-msg-1', eventId: 'tw-msg-1', tasks: [{ action: 'followers' }] });
    const resent = await post(gateway.url, 'stream', twitchDelivery(TWITCH_SECRET, 'notification', follow, 'tw-msg-1'));
    expect(resent.json.decision).toBe('duplicate_delivery');
    const revoked = await post(gateway.url, 'stream', twitchDelivery(TWITCH_SECRET, 'revocation', { subscription: { ...subscription, status: 'authorization_revoked' } }, 'tw-msg-2'));
    expect(revoked.json).toMatchObject({ decision: 'accepted', tasks: [] });
  });
});

describe('zoom', () => {
  it('answers endpoint.url_validation with plainToken and encryptedToken, records it as a handshake, and refuses a forged one', async () => {
    const validation = { payload: { plainToken: 'qgg8vlvZRS6UYooatFL8Aw' }, event_ts: Date.now(), event: 'endpoint.url_validation' };
    const answered = await post(gateway.url, 'meetings', zoomDelivery(ZOOM_SECRET, validation));
    expect(answered.status).toBe(200);
    expect(answered.json).toEqual({ plainToken: 'qgg8vlvZRS6UYooatFL8Aw', encryptedToken: createHmac('sha256', ZOOM_SECRET).update('qgg8vlvZRS6UYooatFL8Aw').digest('hex') });
    const recorded = await handshakes('meetings');
    expect(recorded).toHaveLength(1);
    await expectNoTasks(recorded);
    expect((await post(gateway.url, 'meetings', zoomDelivery('not-the-secret-token', validation))).status).toBe(401);
  });

  it("deduplicates Zoom's retry of an event, which carries no ID, by its content", async () => {
    const started = { event: 'meeting.started', payload: { account_id: 'AAAAAABBBB', object: { id: '85746065432', uuid: '4444AAAiAAAAAiAiAiiAii==' } }, event_ts: 1764669600123 };
    const first = await post(gateway.url, 'meetings', zoomDelivery(ZOOM_SECRET, started));
    expect(first.json).toMatchObject({ decision: 'accepted', eventId: expect.stringMatching(/^zoom-[0-9a-f]{32}$/), tasks: [{ action: 'minutes' }] });
    const retried = await post(gateway.url, 'meetings', zoomDelivery(ZOOM_SECRET, { event_ts: started.event_ts, payload: started.payload, event: started.event }));
    expect(retried.json).toMatchObject({ decision: 'duplicate_delivery', eventId: first.json.eventId });
  });
});

describe('meta', () => {
  it("answers the GET verification with the challenge when the token is the source's, records it as a handshake, and refuses another token 403", async () => {
    const verification = (token: string) => `${gateway.url}/in/whatsapp?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=${token}`;
    const response = await fetch(verification(VERIFY_TOKEN));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await response.text()).toBe('1158201444');
    const recorded = await handshakes('whatsapp');
    expect(recorded).toHaveLength(1);
    await expectNoTasks(recorded);
    const refused = await fetch(verification('meatyhamhocks'));
    expect(refused.status).toBe(403);
    expect((await refused.json()).error.code).toBe('invalid_verify_token');
    expect(await handshakes('whatsapp')).toHaveLength(1);
  });

  it('makes one event per entry, each deduplicated on its own, each task sending its own entry', async () => {
    const metadata = { display_phone_number: '15550783881', phone_number_id: '106540352242922' };
    const message = (wamid: string, text: string) => ({
      id: '102290129340398',
      changes: [{ field: 'messages', value: { messaging_product: 'whatsapp', metadata, messages: [{ from: '16505551234', id: wamid, timestamp: '1764669600', type: 'text', text: { body: text } }] } }],
    });
    const delivered = { id: '102290129340398', changes: [{ field: 'messages', value: { messaging_product: 'whatsapp', metadata, statuses: [{ id: 'wamid.out-1', status: 'delivered', timestamp: '1764669601', recipient_id: '16505551234' }] } }] };
    const account = { id: '102290129340398', time: 1764669602, changes: [{ field: 'account_update', value: { event: 'VERIFIED_ACCOUNT' } }] };
    const batch = (entry: object[]) => post(gateway.url, 'whatsapp', metaDelivery(META_SECRET, { object: 'whatsapp_business_account', entry }));

    const first = await batch([message('wamid.in-1', 'Does it come in another color?'), delivered, account]);
    expect(first.status).toBe(200);
    expect(first.json.decision).toBe('accepted');
    expect(first.json.items.map((i: any) => [i.eventId.replace(/^meta-[0-9a-f]{32}$/, 'meta-<hash>'), i.decision, i.tasks.length])).toEqual([
      ['wamid.in-1', 'accepted', 1],
      ['wamid.out-1:delivered', 'accepted', 1],
      // account_update is not a topic of the inbox action: recorded, and no task.
      ['meta-<hash>', 'accepted', 0],
    ]);
    await taskIn(gateway.store.db, first.json.items[0].tasks[0].id, 'succeeded');
    const sent = downstream.requests('/inbox').map((r) => JSON.parse(r.body.toString()));
    expect(sent).toContainEqual({ object: 'whatsapp_business_account', entry: [message('wamid.in-1', 'Does it come in another color?')] });

    // Meta's retry, batched otherwise and stamped at another time, beside a new message.
    const again = await batch([{ ...account, time: account.time + 30 }, message('wamid.in-2', 'And in blue?'), delivered]);
    expect(again.json.items.map((i: any) => [i.eventId, i.decision])).toEqual([
      [first.json.items[2].eventId, 'duplicate_delivery'],
      ['wamid.in-2', 'accepted'],
      ['wamid.out-1:delivered', 'duplicate_delivery'],
    ]);
    await waitFor(() => downstream.requests('/inbox').length === 3 || undefined);
    expect(downstream.effects('/inbox')).toHaveLength(3);
    expect((await api()('/api/deliveries?source=whatsapp&limit=20')).json.items).toHaveLength(7);
  });
});
