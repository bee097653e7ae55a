import { sql, type SQL } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminApi, ADMIN_TOKEN } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { engine, type TestDatabase } from '../support/engine.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { waitFor } from '../support/forwarding.ts';
import { freshProxiedDatabase, type FaultyProxy } from '../support/tcp-proxy.ts';
import { AdminTokens } from '../../src/http/tokens.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { SESSION_COOKIE, signSession } from '../../src/ui/session.ts';

const ACK_BUDGET_MS = 1500;
const WRITE_STALL_MS = 1500;

let gateway: TestGateway;
let api: ReturnType<typeof adminApi>;
let database: TestDatabase;
let proxy: FaultyProxy | undefined;
/** The database through the proxy, on PostgreSQL. */
let viaProxy: TestDatabase | undefined;

beforeAll(async () => {
  let reached: TestDatabase;
  ({ database, reached, proxy } = await freshProxiedDatabase());
  if (proxy) viaProxy = reached;
  gateway = await startTestGateway(
    { ...shopConfig(undefined, { ackTimeoutMs: ACK_BUDGET_MS }), limits: { writeStallMs: WRITE_STALL_MS } },
    { database: reached, adminToken: ADMIN_TOKEN },
  );
  api = adminApi(gateway.url);
});
afterAll(async () => {
  await gateway?.close();
  await proxy?.close();
  await database?.drop();
});

const rows = <T>(query: SQL) => rowsOf<T>(gateway.store.db, query);

/** Nothing half-written: every key has its receipt, every task its receipt, every accepted receipt its task. */
async function expectWhole(eventId: string) {
  const [orphans] = await rows<{ keys: number; tasks: number; accepted_without_task: number }>(sql`
    select
      (select count(*)::int from delivery_keys k where not exists (select 1 from deliveries d where d.id = k.first_delivery)) as keys,
      (select count(*)::int from tasks t where not exists (select 1 from deliveries d where d.id = t.delivery_id)) as tasks,
      (select count(*)::int from deliveries d where d.decision = 'accepted'
         and not exists (select 1 from tasks t where t.delivery_id = d.id)) as accepted_without_task`);
  expect(orphans).toEqual({ keys: 0, tasks: 0, accepted_without_task: 0 });
  const [tasks] = await rows<{ n: number }>(sql`select count(*)::int as n from tasks where event_id = ${eventId}`);
  expect(tasks!.n).toBe(1);
}

/** Holds the database for `ms`: on PostgreSQL the network stalls; on PGlite a transaction holds its only lock. */
async function stallDatabase(): Promise<() => Promise<void>> {
  if (proxy) {
    proxy.hold();
    return async () => proxy!.release();
  }
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let started!: () => void;
  const holding = new Promise<void>((resolve) => (started = resolve));
  const transaction = gateway.store.db.transaction(async (tx) => {
    await tx.execute(sql`select 1`);
    started();
    await released;
  });
  await holding;
  return async () => {
    release();
    await transaction;
  };
}

describe(`database unavailable (${engine()})`, () => {
  it('a stalled database: 503 with Retry-After inside the ack budget, and the retry is recorded whole', async () => {
    const delivery = shopifyDelivery({ eventId: 'e-stall', webhookId: 'w-stall' });
    const resume = await stallDatabase();
    const started = performance.now();
    const answer = await post(gateway.url, 'shop', delivery);
    const elapsed = performance.now() - started;
    await resume();

    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(answer.json.error.code).toBe('store_timeout');
    expect(elapsed).toBeLessThan(ACK_BUDGET_MS);

    const retry = await post(gateway.url, 'shop', delivery);
    expect(retry.status).toBe(200);
    // The stalled write may have committed once the database came back; then the retry is its duplicate.
    expect(['accepted', 'duplicate_delivery']).toContain(retry.json.decision);
    await expectWhole('e-stall');
  });

  it('a stalled database: a person\'s request is answered 503 after writeStallMs, saying a change may still take effect', async () => {
    await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'e-bulk', webhookId: 'w-bulk' }));
    const cookie = `${SESSION_COOKIE}=${signSession(new AdminTokens(ADMIN_TOKEN), 'admin')}`;
    const dryRun = await (await fetch(`${gateway.url}/ui/tasks/bulk/retry?state=failed`, { headers: { cookie } })).text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(dryRun)?.[1] ?? '';
    const resume = await stallDatabase();
    // A bulk decision waits for the database however long it takes, from the API or the dashboard: a 503 while it
    // still commits would invite a second one.
    const bulk = api('/api/tasks/bulk/retry', { body: { state: 'failed', source: 'shop', note: 'after the outage' } });
    const confirmed = fetch(`${gateway.url}/ui/tasks/bulk/retry`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie },
      body: new URLSearchParams({ _csrf: csrf, state: 'failed', note: 'after the outage' }),
    });
    try {
      const started = performance.now();
      const [listing, page] = await Promise.all([
        api('/api/tasks?state=failed'),
        fetch(`${gateway.url}/ui/attention`, { headers: { cookie: `${SESSION_COOKIE}=${signSession(new AdminTokens(ADMIN_TOKEN), 'admin')}` } }),
      ]);
      expect(performance.now() - started).toBeLessThan(WRITE_STALL_MS + 1_000);
      expect(listing.status).toBe(503);
      expect(listing.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(listing.json.error.code).toBe('database_unanswered');
      expect(listing.json.error.message).toMatch(/may still take effect/);
      expect(page.status).toBe(503);
      expect(await page.text()).toMatch(/has not answered/);
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      await resume();
    }
    expect((await bulk).status).toBe(200);
    expect((await confirmed).status).toBe(303);
    expect((await api('/api/tasks?state=failed')).status).toBe(200);
  });

  // Only a server can go away and come back; embedded PGlite lives and dies with the process.
  if (engine() === 'postgres') it('a database that went down: 503 at once, and recovery without a restart', async () => {
    const delivery = shopifyDelivery({ eventId: 'e-down', webhookId: 'w-down' });
    await proxy!.refuse();
    const answer = await post(gateway.url, 'shop', delivery);
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
    expect((await fetch(`${gateway.url}/readyz`)).status).toBe(503);
    const listing = await api('/api/tasks?state=failed');
    expect(listing.status).toBe(503);
    expect(listing.json.error.code).toBe('database_unavailable');

    await proxy!.restore();
    const retry = await post(gateway.url, 'shop', delivery);
    expect(retry.status).toBe(200);
    expect(retry.json.decision).toBe('accepted');
    await expectWhole('e-down');
  });

  // postgres.js kept the statement a closed connection had failed, and its end() waited for it until the end's
  // timeout: each close of the store after a lost connection took 5 s (scripts/patch-postgres.mjs repairs it).
  if (engine() === 'postgres') it('a connection lost mid-statement lets its client end at once', async () => {
    const client = postgres(viaProxy!.url!, { max: 1, onnotice: () => {}, fetch_types: false });
    const direct = postgres(database.url!, { max: 1, onnotice: () => {} });
    try {
      const statement = client`select pg_sleep(30)`.catch((error: { code?: string }) => error);
      await waitFor(async () => (await direct<{ n: number }[]>`select count(*)::int as n from pg_stat_activity
        where query = 'select pg_sleep(30)' and state = 'active'`)[0]!.n > 0);
      await proxy!.refuse();
      expect(await statement).toMatchObject({ code: 'CONNECTION_CLOSED' });
      const ended = client.end().then(() => 'ended');
      const stillWaiting = new Promise((resolve) => setTimeout(resolve, 3000, 'still waiting'));
      expect(await Promise.race([ended, stillWaiting])).toBe('ended');
    } finally {
      await proxy!.restore();
      await direct.end();
    }
  });

  // A server's connection can go silent without a reset (a failover that moved the address, a dead host): the
  // socket then waits for TCP to give up, ~15 minutes by Linux's defaults, with ingest's batch in flight on it.
  if (engine() === 'postgres') it('connections that went silent: ingest and the worker abandon theirs after writeStallMs and go on on new ones', async () => {
    const warm = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'e-warm', webhookId: 'w-warm' }));
    expect(warm.status).toBe(200);
    expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
    const cut = proxy!.strand();
    try {
      const delivery = shopifyDelivery({ eventId: 'e-silent', webhookId: 'w-silent' });
      const answer = await post(gateway.url, 'shop', delivery);
      expect(answer.status).toBe(503);
      expect(answer.json.error.code).toBe('store_timeout');

      // A readiness probe gets its answer while the pool's connections are silent too, rather than hanging.
      const probed = performance.now();
      const probe = await fetch(`${gateway.url}/readyz`);
      expect(probe.status).toBe(503);
      expect(await probe.json()).toMatchObject({ ok: false, database: 'unanswered' });
      expect(performance.now() - probed).toBeLessThan(WRITE_STALL_MS + 1_000);

      // The sender retries after Retry-After; by then the silent connection has been given up.
      await new Promise((resolve) => setTimeout(resolve, WRITE_STALL_MS));
      const started = performance.now();
      const retry = await post(gateway.url, 'shop', delivery);
      expect(retry.status).toBe(200);
      expect(performance.now() - started).toBeLessThan(ACK_BUDGET_MS);
      // The abandoned batch was written again on the new connection as soon as it was given up: the retry is
      // then its duplicate.
      expect(['accepted', 'duplicate_delivery']).toContain(retry.json.decision);

      // The worker's claims and finishes give up their silent connections the same way: its task is claimed and
      // its attempt recorded while the silence lasts (read past the proxy, on a connection of the test's own).
      const direct = postgres(database.url!, { max: 1, onnotice: () => {} });
      try {
        await waitFor(async () => {
          const [row] = await direct<{ n: number }[]>`select count(*)::int as n from attempts a join tasks t on t.id = a.task_id
            where t.event_id = 'e-silent' and a.finished_at is not null`;
          return row!.n > 0;
        }, 20_000);
      } finally {
        await direct.end();
      }
    } finally {
      // The test's own reads go through the pool, whose idle connections went silent too.
      cut();
    }
    // The pool sees its closed connections' ends and reconnects before the reads below.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await expectWhole('e-silent');
  });

  if (engine() === 'postgres') it('a database alive but stuck (a lock held): each abandoned try is ended on the server, not left to pile up', async () => {
    // Two connections: one holds the lock, the other looks.
    const locker = postgres(database.url!, { max: 2, onnotice: () => {} });
    const laneBackends = async () =>
      (await locker<{ n: number }[]>`select count(*)::int as n from pg_stat_activity
        where application_name like 'oncehook lane %' and wait_event_type = 'Lock'`)[0]!.n;
    let unlock!: () => void;
    const locked = new Promise<void>((resolve) => (unlock = resolve));
    let held!: () => void;
    const holding = new Promise<void>((resolve) => (held = resolve));
    const transaction = locker.begin(async (tx) => {
      await tx`lock table delivery_keys in exclusive mode`;
      held();
      await locked;
    });
    await holding;
    try {
      const delivery = shopifyDelivery({ eventId: 'e-stuck', webhookId: 'w-stuck' });
      expect((await post(gateway.url, 'shop', delivery)).status).toBe(503);
      // Three stalls: before, every abandoned try kept its backend waiting on the lock, one more each time.
      await new Promise((resolve) => setTimeout(resolve, WRITE_STALL_MS * 3 + 500));
      expect(await laneBackends()).toBeLessThanOrEqual(2);
    } finally {
      unlock();
      await transaction;
    }
    const retry = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'e-stuck', webhookId: 'w-stuck' }));
    expect(retry.status).toBe(200);
    await expectWhole('e-stuck');
    await locker.end();
  });

  if (engine() === 'postgres') it('a batch that committed on the connection it gave up is written again under new receipt IDs: its duplicate, not an error', async () => {
    // Ack budget longer than the stall: the delivery is still waiting when its batch is written again.
    const patient = await startTestGateway(
      { ...shopConfig(undefined, { ackTimeoutMs: 6000 }), limits: { writeStallMs: 1000 } },
      { database: viaProxy!, role: 'web' },
    );
    try {
      const warm = await post(patient.url, 'shop', shopifyDelivery({ eventId: 'e-warm-2', webhookId: 'w-warm-2' }));
      expect(warm.status).toBe(200);
      const cut = proxy!.strand({ repliesOnly: true });
      let answer;
      try {
        answer = await post(patient.url, 'shop', shopifyDelivery({ eventId: 'e-lost-answer', webhookId: 'w-lost-answer' }));
      } finally {
        cut();
      }
      // The first write committed and its answer was lost; the second finds it there.
      expect(answer.status).toBe(200);
      expect(answer.json.decision).toBe('duplicate_delivery');
      expect(answer.json.firstSeen.decision).toBe('accepted');
      expect(answer.json.receipt).not.toBe(answer.json.firstSeen.receipt);
    } finally {
      await patient.close();
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    await expectWhole('e-lost-answer');
  });
});
