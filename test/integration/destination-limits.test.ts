import { describe, expect, it } from 'vitest';
import { closeAfterEach } from '../support/close-after-each.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { taskIn, waitFor } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

/** Destinations' limits as the forwarder lives with them: beside other work, and where lookups go elsewhere. */
const FAST = { timeoutMs: 1500, backoff: { initialMs: 20, maxMs: 100 } };

let gateway: TestGateway;
const closing = closeAfterEach();
const downstream = async (): Promise<Downstream> => closing(await startDownstream());

async function deliver(topic: string): Promise<string> {
  const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: `${topic}-${Math.random()}`, topic }));
  expect(answer.json.decision).toBe('accepted');
  return answer.json.tasks[0].id as string;
}

describe('an action a destination limits', () => {
  // The forwarder claimed the actions no destination limits first, with every free slot, and the limited ones with
  // what was left: while the others had a backlog, nothing was left, and the limited action's task waited for the
  // whole backlog though its origin had every slot and token free.
  it('is not starved by a backlog of actions no destination limits', async () => {
    const busy = await downstream();
    const api = await downstream();
    busy.script('/bulk', { otherwise: { status: 201, delayMs: 60 } });
    gateway = await startTestGateway(
      {
        ...shopConfig({
          bulk: { url: `${busy.url}/bulk`, topics: ['bulk'], ...FAST },
          crm: { url: `${api.url}/crm`, topics: ['crm'], ...FAST },
        }),
        destinations: { [api.url]: { maxInFlight: 2 } },
      },
      { forwarder: { concurrency: 1 } },
    );
    closing(gateway);
    const backlog = await Promise.all(Array.from({ length: 30 }, () => deliver('bulk')));
    // The backlog is being worked through when the limited action's task arrives.
    await waitFor(() => busy.requests('/bulk').length >= 3);
    const sentBefore = busy.requests('/bulk').length;
    const crm = await deliver('crm');
    await taskIn(gateway.store.db, crm, 'succeeded');
    const [sent] = api.requests('/crm');
    // One at a time, 60 ms each: the backlog takes two seconds. The limited task goes within a claim or two, not after it.
    const bulkBefore = busy.requests('/bulk').filter((r) => r.at < sent!.at).length;
    expect(bulkBefore - sentBefore).toBeLessThanOrEqual(3);
    for (const id of backlog) await taskIn(gateway.store.db, id, 'succeeded');
  });

  // A route was claimed under every limited origin its requests might go to: an action whose lookups go to a limited
  // search API and whose sends go to an origin no destination limits had its sends held by the search API's limit
  // too, though they never go there. One lookup in flight (maxInFlight 1) stopped every send.
  it('holds only the requests that go to the limited origin: a limited lookup origin does not hold sends elsewhere', async () => {
    const api = await downstream();
    const search = await downstream();
    api.script('/a', { steps: [{ status: 500 }] });
    search.script('/a', { lookup: ['hang'] });
    gateway = await startTestGateway({
      ...shopConfig({ a: { url: `${api.url}/a`, topics: ['a'], lookup: `${search.url}/a/lookup?key={key}`, ...FAST } }),
      destinations: { [search.url]: { maxInFlight: 1 } },
    });
    closing(gateway);
    // The first task's send answers 500 (it may have acted), so its lookup goes to the search API, and hangs there.
    await deliver('a');
    await waitFor(() => search.open().length === 1, 5000);
    const [lookup] = search.requests('/a');
    const second = await deliver('a');
    await taskIn(gateway.store.db, second, 'succeeded');
    const sent = api.requests('/a').find((r) => r.headers['oncehook-task-id'] === second)!;
    // Sent while the lookup still waited for its answer (it gives up after timeoutMs, 1500 ms).
    expect(sent.at - lookup!.at).toBeLessThan(1000);
  });
});
