import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageId } from '../../src/alerts/watcher.ts';
import { ADMIN_TOKEN, adminApi } from '../support/admin.ts';
import { post, SHOP_SECRET, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { waitFor } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

let gateway: TestGateway;
/** The alerts' endpoints: `/held` holds its first request unanswered, `/refuses` answers its first with a 400, late. */
let hooks: Downstream;
let refusing: Downstream;

beforeAll(async () => {
  [hooks, refusing] = await Promise.all([startDownstream(), startDownstream()]);
  refusing.script('/refused', { otherwise: { status: 401 } });
  // The alert's timeout ends the held request: an unknown outcome, sent again under its key. 4 s rather than an
  // action's default 10: longer than `/refuses`'s 3 s, so both opened messages are still on their way together.
  hooks.script('/held', { steps: ['hang'], otherwise: { status: 200 } });
  hooks.script('/refuses', { steps: [{ status: 400, delayMs: 3000 }], otherwise: { status: 200 } });
  const config = {
    alerts: {
      held: { url: `${hooks.url}/held`, format: 'json', on: ['destination_paused'], minIntervalSeconds: 1 },
      refuses: { url: `${hooks.url}/refuses`, format: 'json', on: ['destination_paused'], minIntervalSeconds: 1 },
    },
    sources: {
      shop: {
        adapter: 'shopify',
        secrets: [SHOP_SECRET],
        actions: { refused: { url: `${refusing.url}/refused`, timeoutMs: 5000, backoff: { initialMs: 20, maxMs: 100 } } },
      },
    },
  };
  gateway = await startTestGateway(config, { adminToken: ADMIN_TOKEN, alertRoundMs: 300, forwarder: { alertTimeoutMs: 4000 } });
});
afterAll(async () => {
  await gateway?.close();
  await Promise.all([hooks?.close(), refusing?.close()]);
});

const sent = (path: string) => hooks.requests(path).map((r) => `${JSON.parse(r.body.toString()).type} ${r.headers['idempotency-key']}`);

describe("a condition's alert messages", () => {
  it('go out in their order: each waits while the one before is on its way, not once it is given up', async () => {
    const api = adminApi(gateway.url);
    const view = async (id: string) => (await api(`/api/tasks/${id}`)).json;
    const [heldOpened, heldResolved] = [1, 2].map((n) => messageId('held', 'destination_paused', n)) as [string, string];
    const [refusedOpened, refusedResolved] = [1, 2].map((n) => messageId('refuses', 'destination_paused', n)) as [string, string];

    // A destination is paused: both alerts' opened messages go out. `held`'s is read and held (the gateway cannot
    // know whether it arrived); `refuses`'s is answered 400, late.
    expect((await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'paused-1' }))).status).toBe(200);
    await waitFor(() => hooks.open().some((o) => o.path === '/held') && hooks.open().some((o) => o.path === '/refuses'), 10_000);
    expect((await api(`/api/destinations/${encodeURIComponent(refusing.url)}/resume`, { body: { note: 'rotated' } })).status).toBe(200);

    // The resolved messages are made, and wait behind the opened ones: not sent while those are unanswered.
    const waiting = await waitFor(async () => {
      const views = await Promise.all([view(heldResolved), view(refusedResolved)]);
      return views.every((v) => v?.state === 'pending') && views;
    }, 10_000);
    expect(waiting.map((v) => v.afterTaskId)).toEqual([heldOpened, refusedOpened]);
    expect(sent('/held')).toEqual([`alert.opened ${heldOpened}`]);

    // `refuses`'s opened is given up (a 400: no retry helps): its resolved is let go and sent, not stranded.
    await waitFor(async () => (await view(refusedResolved)).state === 'succeeded', 15_000);
    expect((await view(refusedOpened)).state).toBe('failed');
    expect(sent('/refuses')).toEqual([`alert.opened ${refusedOpened}`, `alert.resolved ${refusedResolved}`]);

    // `held`'s opened times out, is sent again under its key and answered; only then its resolved. Slack shows what
    // arrives in the order it arrives: the last word is "resolved".
    await waitFor(async () => (await view(heldResolved)).state === 'succeeded', 30_000);
    expect(sent('/held')).toEqual([`alert.opened ${heldOpened}`, `alert.opened ${heldOpened}`, `alert.resolved ${heldResolved}`]);
  }, 45_000);
});
