import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { Routes } from '../../src/forward/routes.ts';
import { claimTasks, releaseUnsent } from '../../src/store/atomic/claim.ts';
import { finishAttempts } from '../../src/store/atomic/finish.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { engine } from '../support/engine.ts';
import { finishOf } from '../support/finishes.ts';
import { ledger, task } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

// A stopping worker hands back what it never sent (test/e2e/shutdown.test.ts does it through a real process);
// here, the statement itself, for a send and for a lookup, and against a lease it no longer holds.
const raw = shopConfig({ looked: { url: 'http://127.0.0.1:9/looked', lookup: 'http://127.0.0.1:9/looked/lookup?key={key}' } });
const routes = new Routes(parseConfig(JSON.stringify(raw), 'test').config, 100).forClaim;

let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway(raw, { role: 'web' });
});
afterAll(async () => gateway?.close());

const db = () => gateway.store.db;
const claim = async (owner: string) => {
  const { tasks: [claimed] } = await claimTasks(db(), { owner, routes, limit: 1 });
  return claimed!;
};

describe(`handing back an unsent claim (${engine()})`, () => {
  it('a send goes back to pending as it was, its attempt not counted; a lookup back to outcome_unknown', async () => {
    const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'release-1' }));
    const id: string = answer.json.tasks[0].id;

    const send = await claim('stopping');
    expect(send).toMatchObject({ id, mode: 'send', attempts: 1 });
    expect(await releaseUnsent(db(), { taskId: id, claim: send.claim!, owner: 'stopping', mode: send.mode, priorState: send.priorState })).toBe(true);
    expect(await task(db(), id)).toMatchObject({ state: 'pending', attempts: 0, firstAttemptAt: null, leaseOwner: null });
    expect((await ledger(db(), id)).map((row) => [row.class, row.number, row.claim, row.finishedAt !== null])).toEqual([['released', 1, 1, true]]);

    // Claimed again, the send is number 1 again, a claim of its own: its row stands beside the released one.
    const again = await claim('stopping');
    expect(again).toMatchObject({ id, mode: 'send', attempts: 1, claim: 2 });
    expect(await finishAttempts(db(), [finishOf(again, 'stopping', { status: 503, class: 'retryable', decision: 'retry', state: 'outcome_unknown' })])).toEqual([true]);
    expect((await ledger(db(), id)).map((row) => [row.class, row.number, row.claim])).toEqual([['released', 1, 1], ['retryable', 1, 2]]);

    // The same task after a sent attempt whose outcome is unknown: the next claim is a lookup.
    await db().execute(sql`update tasks set first_attempt_at = now() where id = ${id}`);
    const lookup = await claim('stopping');
    expect(lookup).toMatchObject({ id, mode: 'lookup', lookups: 1 });
    expect(await releaseUnsent(db(), { taskId: id, claim: lookup.claim!, owner: 'stopping', mode: lookup.mode, priorState: lookup.priorState })).toBe(true);
    expect(await task(db(), id)).toMatchObject({ state: 'outcome_unknown', attempts: 1, lookups: 0, leaseOwner: null });
    await db().execute(sql`update tasks set state = 'cancelled' where id = ${id}`); // out of the next claim's way
  });

  it('a keyed resend of an unknown outcome goes back to outcome_unknown, so the key is checked again', async () => {
    const keyedRaw = shopConfig({ keyed: { url: 'http://127.0.0.1:9/keyed', idempotency: 'key' } });
    const keyed = await startTestGateway(keyedRaw, { role: 'web' });
    try {
      const keyedRoutes = new Routes(parseConfig(JSON.stringify(keyedRaw), 'test').config, 100).forClaim;
      const answer = await post(keyed.url, 'shop', shopifyDelivery({ eventId: 'release-keyed' }));
      const id: string = answer.json.tasks[0].id;
      await keyed.store.db.execute(sql`update tasks set state = 'outcome_unknown', attempts = 1, first_attempt_at = now() where id = ${id}`);
      const { tasks: [resend] } = await claimTasks(keyed.store.db, { owner: 'stopping', routes: keyedRoutes, limit: 1 });
      expect(resend).toMatchObject({ id, mode: 'send', attempts: 2, priorState: 'outcome_unknown' });
      expect(
        await releaseUnsent(keyed.store.db, { taskId: id, claim: resend!.claim!, owner: 'stopping', mode: resend!.mode, priorState: resend!.priorState }),
      ).toBe(true);
      expect(await task(keyed.store.db, id)).toMatchObject({ state: 'outcome_unknown', attempts: 1, leaseOwner: null });
    } finally {
      await keyed.close();
    }
  });

  it('a lease no longer held is not released: the task has moved on', async () => {
    const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'release-2' }));
    const id: string = answer.json.tasks[0].id;
    const send = await claim('stopping');
    expect(send.id).toBe(id);
    await db().execute(sql`update tasks set lease_owner = 'another' where id = ${id}`);
    expect(await releaseUnsent(db(), { taskId: id, claim: send.claim!, owner: 'stopping', mode: send.mode, priorState: send.priorState })).toBe(false);
    expect(await task(db(), id)).toMatchObject({ state: 'in_progress', attempts: 1, leaseOwner: 'another', claims: send.claim });
    // Still in flight: no row until the attempt ends.
    expect(await ledger(db(), id)).toEqual([]);
  });
});
