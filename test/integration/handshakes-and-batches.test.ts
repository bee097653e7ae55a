import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminApi } from '../support/admin.ts';
import { post } from '../support/deliveries.ts';
import type { Downstream } from '../support/downstream.ts';
import { taskIn, waitFor } from '../support/forwarding.ts';
import type { TestGateway } from '../support/gateway.ts';
import { startSenderGateway } from '../support/sender-gateway.ts';
import { sendgridSigner, slackDelivery } from '../support/signers.ts';

const SLACK_SECRET = 'slack-signing-secret-for-tests';
const sendgrid = sendgridSigner();
let gateway: TestGateway;
let downstream: Downstream;

beforeAll(async () => {
  ({ gateway, downstream } = await startSenderGateway((action) => ({
    slack: { adapter: 'slack', secrets: [SLACK_SECRET], actions: { bot: action('/bot') } },
    mail: { adapter: 'sendgrid', secrets: [sendgrid.key], actions: { bounces: { ...action('/bounces'), topics: ['bounce', 'dropped'] } } },
  })));
});
afterAll(async () => {
  await gateway?.close();
  await downstream?.close();
});

const api = () => adminApi(gateway.url);

describe('a handshake', () => {
  it('is answered as the sender expects once verified, recorded once as a handshake, and makes no task', async () => {
    const check = slackDelivery(SLACK_SECRET, { token: 't', challenge: 'ch-4k2', type: 'url_verification' });
    for (let i = 0; i < 2; i++) {
      const response = await fetch(`${gateway.url}/in/slack`, { method: 'POST', headers: check.headers, body: check.body });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ challenge: 'ch-4k2' });
    }
    // The replay is answered the same, and deduplicated: it writes nothing.
    const listed = (await api()('/api/deliveries?source=slack&decision=handshake')).json.items;
    expect(listed).toHaveLength(1);
    expect((await api()('/api/deliveries?source=slack')).json.items).toHaveLength(1);
    expect((await api()(`/api/deliveries/${listed[0].id}`)).json.tasks).toEqual([]);
    const forged = slackDelivery('not the secret', { challenge: 'x', type: 'url_verification' });
    expect((await post(gateway.url, 'slack', forged)).status).toBe(401);
  });

  it('leaves the events after it to be deduplicated as ever', async () => {
    const event = slackDelivery(SLACK_SECRET, { type: 'event_callback', event_id: 'Ev-hs-1', event_time: 1764669600, event: { type: 'app_mention' } });
    expect((await post(gateway.url, 'slack', event)).json.decision).toBe('accepted');
    expect((await post(gateway.url, 'slack', event)).json.decision).toBe('duplicate_delivery');
  });

  it('by GET is refused 405 by a sender that makes none', async () => {
    const response = await fetch(`${gateway.url}/in/slack?hub.challenge=1`);
    expect(response.status).toBe(405);
    expect((await response.json()).error.code).toBe('method_not_allowed');
  });
});

describe('a delivery that carries several events', () => {
  it('makes one event per item, each deduplicated on its own, in one transaction, with each decision in the answer', async () => {
    const bounce = { email: 'a@example.com', event: 'bounce', sg_event_id: 'sg-1', timestamp: 1764669600 };
    const open = { email: 'b@example.com', event: 'open', sg_event_id: 'sg-2', timestamp: 1764669601 };
    const first = await post(gateway.url, 'mail', sendgrid.delivery([bounce, open]));
    expect(first.status).toBe(200);
    expect(first.json.decision).toBe('accepted');
    expect(first.json.items.map((i: any) => [i.eventId, i.decision, i.tasks.length])).toEqual([
      ['sg-1', 'accepted', 1],
      ['sg-2', 'accepted', 0],
    ]);
    // The task sends its own event, not the whole list.
    await taskIn(gateway.store.db, first.json.items[0].tasks[0].id, 'succeeded');
    expect(JSON.parse(downstream.requests('/bounces')[0]!.body.toString())).toEqual(bounce);

    const dropped = { email: 'c@example.com', event: 'dropped', sg_event_id: 'sg-3', timestamp: 1764669602 };
    const again = await post(gateway.url, 'mail', sendgrid.delivery([bounce, dropped]));
    expect(again.json.items.map((i: any) => [i.eventId, i.decision])).toEqual([
      ['sg-1', 'duplicate_delivery'],
      ['sg-3', 'accepted'],
    ]);
    await waitFor(() => downstream.requests('/bounces').length === 2 || undefined);
    expect(downstream.effects('/bounces')).toHaveLength(2);
    const receipts = (await api()('/api/deliveries?source=mail&limit=10')).json.items;
    expect(receipts).toHaveLength(4);
  });
});
