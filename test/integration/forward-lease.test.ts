import { eq, inArray, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { Forwarder } from '../../src/forward/forwarder.ts';
import { Routes } from '../../src/forward/routes.ts';
import { createLogger } from '../../src/log.ts';
import { createMetrics } from '../../src/metrics.ts';
import { claimTasks, reclaimExpiredLeases, releaseUnsent, renewLease, type ClaimedTask } from '../../src/store/atomic/claim.ts';
import { finishAttempts, type AttemptFinish } from '../../src/store/atomic/finish.ts';
import { retryTask, type OperatorOutcome } from '../../src/store/atomic/operator.ts';
import { attemptChart } from '../../src/store/queries/attempt-series.ts';
import { attemptTally } from '../../src/store/queries/attempt-tally.ts';
import { windowOf } from '../../src/store/queries/time-buckets.ts';
import type { Db } from '../../src/store/connect.ts';
import { destinations, tasks } from '../../src/store/schema.ts';
import { taskView } from '../../src/store/task-view.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { engine } from '../support/engine.ts';
import { finishOf } from '../support/finishes.ts';
import { ledger, rows, task, taskIn, waitFor } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

/** The web role only: these tests play the dead worker themselves, then start a live one. */
let gateway: TestGateway;
let downstream: Downstream;
let config: ReturnType<typeof parseConfig>['config'];

beforeAll(async () => {
  downstream = await startDownstream();
  const raw = shopConfig({
    plain: { url: `${downstream.url}/plain`, topics: ['plain'], timeoutMs: 300 },
    keyed: { url: `${downstream.url}/keyed`, topics: ['keyed'], idempotency: 'key', timeoutMs: 300 },
    parked: { url: `${PARKED_ORIGIN}/parked`, topics: ['parked'], timeoutMs: 300 },
  });
  config = parseConfig(JSON.stringify(raw), 'test').config;
  gateway = await startTestGateway(raw, { role: 'web' });
});
afterAll(async () => {
  await gateway?.close();
  await downstream?.close();
});

const db = () => gateway.store.db;
/** A destination the claim race test pauses, so its backlog is walked past, never sent. */
const PARKED_ORIGIN = 'http://127.0.0.2:9';
const GRACE_MS = 100;
const routes = () => new Routes(config, GRACE_MS).forClaim;

async function deliver(topic: string): Promise<string> {
  const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: `${topic}-${Math.random()}`, topic }));
  return answer.json.tasks[0].id;
}

/** Attempts by class counted whole: the ended ones' rows and the tasks in flight. */
async function wholeCount(): Promise<Record<string, number>> {
  const counted = await rows<{ key: string; n: number }>(
    db(),
    sql`select key, count(*)::int as n from (
          select coalesce(class, 'open') as key from attempts
          union all select 'open' from tasks where state = 'in_progress' and claim_kind is not null) a
        group by key`,
  );
  return Object.fromEntries(counted.map((row) => [row.key, row.n]));
}

/** Claims the task as a worker that then dies: the claim and its ledger row are all it leaves. */
async function claimAndDie(id: string) {
  const { tasks: claimed } = await claimTasks(db(), { owner: 'dead-worker', routes: routes(), limit: 10 });
  expect(claimed.map((t) => t.id)).toEqual([id]);
  return claimed[0]!;
}

/**
 * A process names its leases with one owner. Stalled past its lease, it reclaims the task itself and resends it
 * (keyed, within retention) while the first attempt's answer is still on its way.
 */
async function claimedTwice(owner: string) {
  const id = await deliver('keyed');
  const { tasks: [first] } = await claimTasks(db(), { owner, routes: routes(), limit: 10 });
  await db().execute(sql`update tasks set lease_expires_at = now() - interval '1 second' where id = ${id}`);
  expect((await reclaimExpiredLeases(db())).map((t) => t.id)).toEqual([id]);
  const { tasks: [second] } = await claimTasks(db(), { owner, routes: routes(), limit: 10 });
  expect(second).toMatchObject({ id, mode: 'send', attempts: 2, priorState: 'outcome_unknown' });
  return { id, first: first!, second: second! };
}

/** A 400: the request's answer that fails the task. */
const rejected = { status: 400, class: 'rejected', error: 'HTTP 400', decision: 'failed', state: 'failed' } as const;

function liveWorker() {
  return new Forwarder(
    { config, store: gateway.store, logger: createLogger('silent'), metrics: createMetrics() },
    { pollMs: 50, leaseGraceMs: GRACE_MS },
  );
}

describe('leases', () => {
  it('a worker that died mid-attempt: its lease is reclaimed as an unknown outcome, never blindly resent', async () => {
    const plain = await deliver('plain');
    await claimAndDie(plain);
    const keyed = await deliver('keyed');
    await claimAndDie(keyed);

    const worker = liveWorker();
    await worker.start();
    try {
      const held = await taskIn(db(), plain, 'needs_review');
      expect(held.lastError).toMatch(/no idempotency key and has no lookup/);
      expect((await ledger(db(), plain)).map((r) => [r.class, r.decision])).toEqual([['lease_expired', 'outcome_unknown']]);
      expect(downstream.requests('/plain')).toHaveLength(0);

      // With a key still kept downstream, the same key and bytes go again as attempt 2.
      await taskIn(db(), keyed, 'succeeded');
      expect(downstream.requests('/keyed').map((r) => [r.headers['idempotency-key'], r.headers['oncehook-attempt']])).toEqual([[keyed, '2']]);
      expect((await ledger(db(), keyed)).map((r) => [r.number, r.class])).toEqual([
        [1, 'lease_expired'],
        [2, 'success'],
      ]);
    } finally {
      await worker.stop();
    }
  });

  it('a crash after the claim leaves the attempt on record: in flight on its task, then closed as lease_expired', async () => {
    const id = await deliver('plain');
    const classes = attemptTally(gateway.store);
    const open = async () => (await classes()).open ?? 0;
    const chart = attemptChart(gateway.store);
    const charted = async () => (await chart(await windowOf(db(), 'hour'))).counts.open?.reduce((a, b) => a + b, 0) ?? 0;
    const [openBefore, chartedBefore] = [await open(), await charted()];
    const claimed = await claimAndDie(id);
    const { claimedAt } = await task(db(), id);
    expect(claimed).toMatchObject({ mode: 'send', attempts: 1, claim: 1 });

    // No row until the attempt ends; the task's view, the stats and the chart show it in flight.
    expect(await ledger(db(), id)).toEqual([]);
    const view = (await taskView(db(), id))!;
    expect(view.ledger).toEqual([expect.objectContaining({ id: null, kind: 'send', number: 1, claim: 1, startedAt: claimedAt, finishedAt: null, class: null })]);
    expect(await open()).toBe(openBefore + 1);
    expect(await charted()).toBe(chartedBefore + 1);

    await db().execute(sql`update tasks set lease_expires_at = now() - interval '1 second' where id = ${id}`);
    expect((await reclaimExpiredLeases(db())).map((t) => t.id)).toEqual([id]);
    const written = await ledger(db(), id);
    expect(written.map((r) => [r.kind, r.number, r.claim, r.class, r.decision])).toEqual([['send', 1, 1, 'lease_expired', 'outcome_unknown']]);
    expect(written[0]!.startedAt).toEqual(claimedAt);
    expect(written[0]!.finishedAt).not.toBeNull();
    expect((await taskView(db(), id))!.ledger).toEqual(written);
    expect(await open()).toBe(openBefore);
    expect(await charted()).toBe(chartedBefore);
    await db().update(tasks).set({ state: 'cancelled' }).where(eq(tasks.id, id));
  });

  it('one row per claim: the ledger refuses a second row for a claim of a task', async () => {
    const id = await deliver('plain');
    const claimed = await claimAndDie(id);
    await finishAttempts(db(), [finishOf(claimed, 'dead-worker')]);
    await expect(db().execute(sql`insert into attempts (task_id, claim, number) values (${id}, ${claimed.claim}, 1)`)).rejects.toThrow();
    expect(await ledger(db(), id)).toHaveLength(1);
  });

  it('a renewed lease moves forward in database time; a lease held by another worker is not renewed', async () => {
    const id = await deliver('plain');
    await claimAndDie(id);
    const before = (await task(db(), id)).leaseExpiresAt!;
    expect(await renewLease(db(), { taskId: id, owner: 'dead-worker', leaseMs: 60_000 })).toBe(true);
    expect((await task(db(), id)).leaseExpiresAt!.getTime()).toBeGreaterThan(before.getTime() + 50_000);
    expect(await renewLease(db(), { taskId: id, owner: 'someone-else', leaseMs: 60_000 })).toBe(false);
    await db().update(tasks).set({ state: 'cancelled', leaseOwner: null }).where(eq(tasks.id, id));
  });

  it('a result that comes back after its lease was reclaimed is kept in the ledger as superseded', async () => {
    const id = await deliver('plain');
    const claimed = await claimAndDie(id);
    // Injected: the lease runs out while the request is still in flight.
    await db().execute(sql`update tasks set lease_expires_at = now() - interval '1 second' where id = ${id}`);
    expect((await reclaimExpiredLeases(db())).map((t) => t.id)).toEqual([id]);
    // The tally counts the reclaim's row as lease_expired, then meets it again with the late result's class.
    const classes = attemptTally(gateway.store);
    const counted = await classes();
    expect(counted).toEqual(await wholeCount());

    const kept = await finishAttempts(db(), [finishOf(claimed, 'dead-worker', { reference: 'late-ref' })]);
    expect(kept).toEqual([false]);
    expect((await task(db(), id)).state).toBe('outcome_unknown');
    const [row] = await ledger(db(), id);
    expect(row).toMatchObject({ class: 'success', reference: 'late-ref' });
    expect(row!.decision).toMatch(/superseded/);
    const after = await classes();
    expect(after).toEqual(await wholeCount());
    expect(after.success).toBe((counted.success ?? 0) + 1);
    expect(after.lease_expired ?? 0).toBe(counted.lease_expired! - 1);
    await db().update(tasks).set({ state: 'cancelled' }).where(eq(tasks.id, id));
  });

  it('a late result of a process whose lease was reclaimed and which claimed the task again is superseded by its new claim', async () => {
    const owner = 'stalled-worker';
    const { id, first, second } = await claimedTwice(owner);
    expect(await finishAttempts(db(), [finishOf(first, owner, rejected)])).toEqual([false]);
    expect(await releaseUnsent(db(), { taskId: id, claim: first.claim!, owner, mode: 'send', priorState: 'pending' })).toBe(false);
    expect(await task(db(), id)).toMatchObject({ state: 'in_progress', leaseOwner: owner, attempts: 2 });

    expect(await finishAttempts(db(), [finishOf(second, owner, { reference: 'ref-2' })])).toEqual([true]);
    expect(await task(db(), id)).toMatchObject({ state: 'succeeded', resultReference: 'ref-2' });
    expect((await ledger(db(), id)).map((r) => r.decision)).toEqual([expect.stringMatching(/superseded/), 'succeeded']);
  });

  it("a late result and the next claim's finish of one task in one batch: each claim's own row, and only the second decides", async () => {
    const owner = 'stalled-batch-worker';
    const { id, first, second } = await claimedTwice(owner);
    const kept = await finishAttempts(db(), [finishOf(first, owner, rejected), finishOf(second, owner, { reference: 'ref-2' })]);
    expect(kept).toEqual([false, true]);
    expect(await task(db(), id)).toMatchObject({ state: 'succeeded', resultReference: 'ref-2' });
    expect((await ledger(db(), id)).map((r) => [r.claim, r.number, r.class, r.decision])).toEqual([
      [1, 1, 'rejected', expect.stringMatching(/superseded/)],
      [2, 2, 'success', 'succeeded'],
    ]);
  });

  it('a finish sent again after its commit (the answer lost on the way) changes neither the task nor the ledger', async () => {
    const id = await deliver('plain');
    const { tasks: [claimed] } = await claimTasks(db(), { owner: 'resending-worker', routes: routes(), limit: 10 });
    const finish = finishOf(claimed!, 'resending-worker', { reference: 'ref-1' });
    expect(await finishAttempts(db(), [finish])).toEqual([true]);
    const [before] = await ledger(db(), id);
    expect(await finishAttempts(db(), [finish])).toEqual([false]);
    expect(await task(db(), id)).toMatchObject({ state: 'succeeded', resultReference: 'ref-1' });
    expect(await ledger(db(), id)).toEqual([before]);
  });

  it('finishes written in one batch: each task takes its own decision, a reclaimed one is superseded, a shared destination cools once', async () => {
    const ids = [await deliver('plain'), await deliver('plain'), await deliver('plain')];
    const { tasks: claimed } = await claimTasks(db(), { owner: 'batch-worker', routes: routes(), limit: 10 });
    expect(claimed.map((t) => t.id).sort()).toEqual([...ids].sort());
    const [first, second, late] = ids.map((id) => claimed.find((t) => t.id === id)!);
    await db().execute(sql`update tasks set lease_expires_at = now() - interval '1 second' where id = ${late!.id}`);
    expect((await reclaimExpiredLeases(db())).map((t) => t.id)).toEqual([late!.id]);

    const origin = 'http://cooling.invalid';
    const retry = { status: 503, class: 'retryable', error: 'HTTP 503', decision: 'retry', state: 'pending' } as const;
    const kept = await finishAttempts(db(), [
      finishOf(first!, 'batch-worker', { ...retry, delayMs: 5_000, destination: { origin, pause: null } }),
      finishOf(late!, 'batch-worker', { reference: 'late-ref' }),
      finishOf(second!, 'batch-worker', { ...retry, delayMs: 20_000, destination: { origin, pause: null } }),
    ]);
    expect(kept).toEqual([true, false, true]);

    const [cooling] = await db().select().from(destinations).where(eq(destinations.origin, origin));
    const now = Date.now();
    expect(cooling!.cooldownUntil!.getTime()).toBeGreaterThan(now + 15_000);
    expect(cooling!.pausedAt).toBeNull();
    const waits = await Promise.all([first, second].map(async (t) => (await task(db(), t!.id)).nextAttemptAt.getTime() - now));
    expect(waits[0]).toBeGreaterThan(3_000);
    expect(waits[0]).toBeLessThan(15_000);
    expect(waits[1]).toBeGreaterThan(15_000);
    for (const t of [first, second]) {
      expect(await task(db(), t!.id)).toMatchObject({ state: 'pending', leaseOwner: null, lastError: 'HTTP 503' });
      expect((await ledger(db(), t!.id)).map((r) => [r.class, r.decision, r.responseStatus])).toEqual([['retryable', 'retry', 503]]);
    }
    expect((await task(db(), late!.id)).state).toBe('outcome_unknown');
    expect((await ledger(db(), late!.id))[0]!.decision).toMatch(/superseded/);

    await db().update(tasks).set({ state: 'cancelled', leaseOwner: null }).where(inArray(tasks.id, ids));
    await db().delete(destinations).where(eq(destinations.origin, origin));
  });
});

// Two sessions at once: PGlite runs one statement at a time, so there is no instant between a claim's snapshot
// and its lock for another change to land in.
if (engine() === 'postgres') describe('the claim', () => {
  it("decides on the row it locked: a person's retry committed while the claim walked the queue is kept", async () => {
    const id = await deliver('plain');
    await claimAndDie(id);
    await db().execute(sql`update tasks set lease_expires_at = now() - interval '1 second' where id = ${id}`);
    await reclaimExpiredLeases(db());
    await taskIn(db(), id, 'outcome_unknown');

    // A paused destination's backlog, due before the task: the claim walks past it, which holds the instant
    // between its snapshot and its lock on the task open long enough to commit the retry in it.
    await db().execute(sql`
      insert into tasks (id, source, action, event_id, delivery_id, state, body_sha256, next_attempt_at)
      select ${id} || '/parked/' || n, source, 'parked', event_id, delivery_id, 'pending', body_sha256,
        now() - interval '1 hour'
      from tasks, generate_series(1, 80000) n where id = ${id}`);
    await db().insert(destinations).values({ origin: PARKED_ORIGIN, pausedAt: new Date(), pausedReason: 'test' });

    // The retry's transaction begins before the claim (its `next_attempt_at = now()` is then due for the
    // claim) and commits while the claim runs.
    let commit!: () => void;
    let retried!: (outcome: OperatorOutcome) => void;
    const retry = new Promise<OperatorOutcome>((resolve) => (retried = resolve));
    const retryCommitted = db().transaction(async (tx) => {
      retried(await retryTask(tx as unknown as Db, { taskId: id, actor: 'test', note: 'checked by hand: resend' }));
      await new Promise<void>((resolve) => (commit = resolve));
    });
    expect(await retry).toEqual({ done: true });
    let claimReturned = false;
    const claiming = claimTasks(db(), { owner: 'worker', routes: routes(), limit: 10 }).finally(() => (claimReturned = true));
    try {
      // The claim's statement locks the table it writes once its plan is ready, just before its snapshot.
      await waitFor(async () => (await rows<{ n: number }>(db(), sql`select count(*)::int as n from pg_locks l
        join pg_stat_activity a using (pid)
        where l.relation = 'tasks'::regclass and l.mode = 'RowExclusiveLock' and a.query like '%oncehook_claim_batch%'
          and a.pid <> pg_backend_pid()`))[0]!.n > 0, 5_000);
      await new Promise((resolve) => setTimeout(resolve, 5));
      expect(claimReturned, 'the claim is still walking the backlog when the retry commits').toBe(false);
    } finally {
      commit();
      await retryCommitted;
    }
    let claimed: ClaimedTask[];
    try {
      ({ tasks: claimed } = await claiming);
    } finally {
      await db().execute(sql`delete from tasks where action = 'parked'`);
      await db().execute(sql`delete from task_refs where task_id like ${id + '/parked/%'}`);
      await db().delete(destinations).where(eq(destinations.origin, PARKED_ORIGIN));
    }

    expect(claimed.map((t) => [t.id, t.mode, t.priorState])).toEqual([[id, 'send', 'pending']]);
    expect((await task(db(), id)).state).toBe('in_progress');
    await finishAttempts(db(), [finishOf(claimed[0]!, 'worker')]);
    expect((await task(db(), id)).state).toBe('succeeded');
  });
});
