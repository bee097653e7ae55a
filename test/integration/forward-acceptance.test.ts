import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Forwarder } from '../../src/forward/forwarder.ts';
import { parseConfig } from '../../src/config/load.ts';
import { sha256Hex } from '../../src/ids.ts';
import { createLogger } from '../../src/log.ts';
import { createMetrics } from '../../src/metrics.ts';
import { openStore, type Store } from '../../src/store/connect.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { ledger, rows, taskIn } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

const FAST = { timeoutMs: 400, backoff: { initialMs: 20, maxMs: 100 } };
const TOKEN = 'acceptance-admin-token';

let gateway: TestGateway;
let downstream: Downstream;
let config: object;

beforeAll(async () => {
  downstream = await startDownstream();
  const to = (path: string, topics: string[], extra: object = {}) => ({ url: `${downstream.url}${path}`, topics, ...FAST, ...extra });
  const lookup = (path: string) => `${downstream.url}${path}/lookup?key={key}`;
  config = shopConfig({
    record: to('/record', ['record'], { idempotency: 'key', referencePointer: '/id' }),
    'mail-lookup': to('/mail-lookup', ['mail-lookup'], { lookup: lookup('/mail-lookup'), referencePointer: '/id' }),
    'mail-plain': to('/mail-plain', ['mail-plain']),
    // Twenty tasks at once between two workers on one PGlite, a loaded machine: 400 ms could pass before an answer is
    // read, and an unknown outcome of an action with neither key nor lookup goes to review, not to success.
    race: to('/race', ['race'], { timeoutMs: 5000 }),
    crm: to('/crm', ['steps'], { idempotency: 'key' }),
    ticket: to('/ticket', ['steps'], { after: 'crm', approval: 'required' }),
    'keyed-fresh': to('/keyed-fresh', ['keyed-fresh'], { idempotency: 'key' }),
    'keyed-expired': to('/keyed-expired', ['keyed-expired'], { idempotency: 'key', keyRetention: '1ms' }),
    'keyed-expired-lookup': to('/keyed-expired-lookup', ['keyed-expired-lookup'], {
      idempotency: 'key',
      keyRetention: '1ms',
      lookup: lookup('/keyed-expired-lookup'),
    }),
  });
  gateway = await startTestGateway(config, { adminToken: TOKEN });
});
afterAll(async () => {
  await gateway?.close();
  await downstream?.close();
});

const db = () => gateway.store.db;

async function deliver(topic: string, eventId = `${topic}-${Math.random()}`) {
  const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId, topic }));
  expect(answer.status).toBe(200);
  return answer.json as { decision: string; tasks: { id: string; action: string; state?: string }[] };
}

const idOf = (answer: { tasks: { id: string; action: string }[] }, action: string) => answer.tasks.find((t) => t.action === action)!.id;

describe('acceptance', () => {
  it('(1) a normal success stores the downstream reference', async () => {
    const id = idOf(await deliver('record'), 'record');
    const done = await taskIn(db(), id, 'succeeded');
    const [effect] = downstream.effects('/record').filter((e) => e.key === id);
    expect(done.resultReference).toBe(effect!.id);
    expect((await ledger(db(), id)).map((r) => [r.class, r.reference])).toEqual([['success', effect!.id]]);
  });

  it('(2) duplicate deliveries of one event make one effect; later tries are answered from the record', async () => {
    const eventId = `dup-${Math.random()}`;
    const delivery = shopifyDelivery({ eventId, topic: 'record', webhookId: `w-${eventId}` });
    const first = await post(gateway.url, 'shop', delivery);
    const id = first.json.tasks[0].id;
    await taskIn(db(), id, 'succeeded');

    const retried = await post(gateway.url, 'shop', delivery);
    const otherSubscription = await post(gateway.url, 'shop', shopifyDelivery({ eventId, topic: 'record' }));
    expect(retried.json).toMatchObject({ decision: 'duplicate_delivery', tasks: [{ id, state: 'succeeded' }] });
    expect(otherSubscription.json).toMatchObject({ decision: 'duplicate_event', tasks: [{ id, state: 'succeeded' }] });
    // Succeeded is final: no claim picks the task again, so one request and one ledger row are all there will be.
    expect(downstream.requests('/record').filter((r) => r.headers['idempotency-key'] === id)).toHaveLength(1);
    expect(await ledger(db(), id)).toHaveLength(1);
  });

  it('(3) the downstream succeeded, then timed out: confirmed by the lookup, or held for review', async () => {
    downstream.script('/mail-lookup', { steps: ['hang'] });
    downstream.script('/mail-plain', { steps: ['hang'] });
    const confirmed = idOf(await deliver('mail-lookup'), 'mail-lookup');
    const held = idOf(await deliver('mail-plain'), 'mail-plain');

    const done = await taskIn(db(), confirmed, 'succeeded');
    expect(downstream.effects('/mail-lookup')).toHaveLength(1);
    expect(done.resultReference).toBe(downstream.effects('/mail-lookup')[0]!.id);
    expect((await ledger(db(), confirmed)).map((r) => [r.kind, r.class])).toEqual([
      ['send', 'unknown'],
      ['lookup', 'lookup_found'],
    ]);

    await taskIn(db(), held, 'needs_review');
    expect(downstream.effects('/mail-plain')).toHaveLength(1);
    expect(downstream.requests('/mail-plain')).toHaveLength(1);
  });

  it('(4) two workers claiming at once: one attempt and one effect per task', async () => {
    // A second worker with its own connections (on PGlite, the one embedded database both must share).
    const second: Store = gateway.store.kind === 'postgres' ? await openStore({ databaseUrl: gateway.database.url }) : gateway.store;
    const rival = new Forwarder(
      { config: parseConfig(JSON.stringify(config), 'test').config, store: second, logger: createLogger('silent'), metrics: createMetrics() },
      { pollMs: 50 },
    );
    await rival.start();
    try {
      const ids = await Promise.all(Array.from({ length: 20 }, async () => idOf(await deliver('race'), 'race')));
      for (const id of ids) await taskIn(db(), id, 'succeeded');
      const perKey = new Map<string, number>();
      for (const effect of downstream.effects('/race')) perKey.set(effect.key!, (perKey.get(effect.key!) ?? 0) + 1);
      expect(ids.map((id) => perKey.get(id))).toEqual(ids.map(() => 1));
      const [count] = await rows<{ n: number }>(db(), sql`select count(*)::int as n from attempts a join tasks t on t.id = a.task_id where t.action = 'race'`);
      expect(count!.n).toBe(20);
    } finally {
      await rival.stop();
      if (second !== gateway.store) await second.close();
    }
  });

  it("(5) resuming after a person's decision keeps completed steps, sends the approved bytes, and only what is unresolved", async () => {
    downstream.script('/crm', { steps: [{ status: 500 }], honourKey: true });
    const answer = await deliver('steps');
    const crm = idOf(answer, 'crm');
    const ticket = idOf(answer, 'ticket');
    await taskIn(db(), ticket, 'awaiting_approval');

    const approved = await fetch(`${gateway.url}/api/tasks/${ticket}/approve`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ note: 'checked the order by hand' }),
    });
    expect(approved.status).toBe(200);
    const view = await approved.json();
    expect(view.operatorActions).toMatchObject([{ kind: 'approve', note: 'checked the order by hand' }]);

    await taskIn(db(), ticket, 'succeeded');
    const crmRequests = downstream.requests('/crm').filter((r) => r.headers['idempotency-key'] === crm);
    const [ticketRequest, ...more] = downstream.requests('/ticket').filter((r) => r.headers['oncehook-task-id'] === ticket);
    expect(more).toHaveLength(0);
    // The step ran only after its sibling's success, and that success was not repeated.
    expect(crmRequests).toHaveLength(2);
    expect(ticketRequest!.at).toBeGreaterThan(crmRequests[1]!.at);
    expect(sha256Hex(ticketRequest!.body)).toBe(view.operatorActions[0].detail.bodySha256);
  });

  it("(6) a rerun after the downstream's key retention does not trust the old key: lookup, or review", async () => {
    for (const path of ['/keyed-fresh', '/keyed-expired', '/keyed-expired-lookup']) downstream.script(path, { steps: ['hang'], honourKey: true });
    const fresh = idOf(await deliver('keyed-fresh'), 'keyed-fresh');
    const expired = idOf(await deliver('keyed-expired'), 'keyed-expired');
    const looked = idOf(await deliver('keyed-expired-lookup'), 'keyed-expired-lookup');

    // Within retention the same key is sent again, and the downstream answers it from its record.
    await taskIn(db(), fresh, 'succeeded');
    expect(downstream.requests('/keyed-fresh').map((r) => r.headers['idempotency-key'])).toEqual([fresh, fresh]);
    expect(downstream.effects('/keyed-fresh')).toHaveLength(1);

    const held = await taskIn(db(), expired, 'needs_review');
    expect(held.lastError).toMatch(/older than the downstream keeps idempotency keys/);
    expect(downstream.requests('/keyed-expired')).toHaveLength(1);

    await taskIn(db(), looked, 'succeeded');
    expect(downstream.requests('/keyed-expired-lookup').map((r) => r.method)).toEqual(['POST', 'GET']);
    expect(downstream.effects('/keyed-expired-lookup')).toHaveLength(1);
  });
});
