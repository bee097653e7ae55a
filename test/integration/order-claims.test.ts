import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { Routes } from '../../src/forward/routes.ts';
import { claimTasks, reclaimExpiredLeases, type ClaimedTask, type ClaimRoute } from '../../src/store/atomic/claim.ts';
import { finishAttempts } from '../../src/store/atomic/finish.ts';
import { openStore, type Store } from '../../src/store/connect.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { engine } from '../support/engine.ts';
import { finishOf } from '../support/finishes.ts';
import { rows, waitFor } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

/**
 * The claim and the finish of ordered tasks, played by hand: many claimers at once (on PostgreSQL each on a store of
 * its own, as separate instances would be), and a worker that dies holding its keys.
 */
let gateway: TestGateway;
let config: ReturnType<typeof parseConfig>['config'];
/** The stores the claimers use: the gateway's, and on PostgreSQL three more with connections of their own. */
const stores: Store[] = [];

beforeAll(async () => {
  const raw = shopConfig({
    seq: {
      url: 'http://127.0.0.1:9/seq',
      idempotency: 'key',
      topics: ['seq'],
      order: { key: '{body:/id}', by: '{body:/version}', mode: 'sequence' },
    },
  });
  config = parseConfig(JSON.stringify(raw), 'test').config;
  gateway = await startTestGateway(raw, { role: 'web' });
  stores.push(gateway.store);
  if (engine() === 'postgres') {
    for (let i = 0; i < 3; i++) stores.push(await openStore({ databaseUrl: gateway.database.url }));
  }
});
afterAll(async () => {
  for (const store of stores.slice(1)) await store.close();
  await gateway?.close();
});

const routes = (): readonly ClaimRoute[] => new Routes(config, 100).forClaim;

/** Records `versions` of each key, each key's versions out of order, interleaved across keys. */
async function fill(keys: number[], versions: number[], made = new Map<string, { key: number; version: number }>()) {
  for (const version of versions) {
    await Promise.all(
      keys.map(async (key) => {
        const body = JSON.stringify({ id: key, version });
        const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: `seq-${key}-${version}-${Math.random()}`, topic: 'seq', body }));
        made.set(answer.json.tasks[0].id, { key, version });
      }),
    );
  }
  return made;
}


interface Send {
  /** The task sent: its key and version are looked up once everything is recorded (a claim may beat ingest's answer). */
  id: string;
  /** performance.now() when its claim returned, and when its finish was asked: inside the database's own span. */
  from: number;
  to: number;
}

/** A worker: claims, holds each task a random moment (its request in flight), finishes; until nothing is left. */
async function claimer(store: Store, owner: string, sends: Send[], until: () => Promise<boolean>) {
  while (!(await until())) {
    const { tasks: claimed } = await claimTasks(store.db, { owner, routes: routes(), limit: 4 });
    const from = performance.now();
    if (claimed.length === 0) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      continue;
    }
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 10));
    const to = performance.now();
    for (const c of claimed) sends.push({ id: c.id, from, to });
    expect(await finishAttempts(store.db, claimed.map((c) => finishOf(c, owner)))).toEqual(claimed.map(() => true));
  }
}

/** Deadlocks the server detected in this database (a single session cannot have one: PGlite's is 0). */
async function deadlocks(): Promise<number> {
  if (engine() !== 'postgres') return 0;
  // The statistics reach the view once each backend flushes them, within a second of its last transaction.
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  await rows(gateway.store.db, sql`select pg_stat_clear_snapshot()`);
  const [row] = await rows<{ n: number }>(gateway.store.db, sql`select deadlocks::int as n from pg_stat_database where datname = current_database()`);
  return row!.n;
}

/**
 * Finishes `claimed` while another transaction, begun by `hold`, keeps the finish waiting for a lock of `event`'s
 * kind; once it waits, that transaction commits. Answers what the finish kept.
 */
async function finishHeldUp(
  claimed: ClaimedTask,
  owner: string,
  hold: (tx: postgres.TransactionSql) => Promise<unknown>,
  event: 'advisory' | 'transactionid',
): Promise<boolean[]> {
  const other = postgres(gateway.database.url!, { max: 1, onnotice: () => {} });
  try {
    const { finish } = await other.begin(async (tx) => {
      await hold(tx);
      const finish = finishAttempts(gateway.store.db, [finishOf(claimed, owner)]);
      await waitFor(async () => {
        const [row] = await tx<{ n: number }[]>`select count(*)::int as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock' and wait_event = ${event}`;
        return row!.n > 0;
      });
      return { finish };
    });
    return await finish;
  } finally {
    await other.end();
  }
}

/** Whether a task is held, and due: a released one is neither held nor waiting. */
const standing = async (id: string) =>
  (await rows<{ held: boolean; due: boolean }>(gateway.store.db, sql`select held, next_attempt_at <= now() as due from tasks where id = ${id}`))[0];

const settled = async (made: Map<string, unknown>) => {
  const [row] = await rows<{ n: number }>(
    gateway.store.db,
    sql`select count(*)::int as n from tasks where id in (select jsonb_array_elements_text(${JSON.stringify([...made.keys()])}::jsonb)) and state = 'succeeded'`,
  );
  return row!.n === made.size;
};

/** Each key's sends in the order they were made: never two at once, every version once, in version order. */
function expectOneAtATimeInOrder(made: Map<string, { key: number; version: number }>, sends: Send[], keys: number[], versions: number[]) {
  for (const key of keys) {
    const mine = sends.filter((s) => made.get(s.id)!.key === key).sort((a, b) => a.from - b.from);
    expect(mine.map((s) => made.get(s.id)!.version), `key ${key}`).toEqual([...versions].sort((a, b) => a - b));
    for (let i = 1; i < mine.length; i++) expect(mine[i]!.from, `key ${key}: send ${i} began before send ${i - 1} ended`).toBeGreaterThanOrEqual(mine[i - 1]!.to);
  }
}

describe('ordered tasks under concurrent claims', () => {
  it('many claimers at once never have two of one key in flight, and each key goes in order', async () => {
    const keys = Array.from({ length: 12 }, (_, i) => 1000 + i);
    const versions = [3, 1, 4, 2, 5];
    const made = await fill(keys, versions);
    const sends: Send[] = [];
    await Promise.all(Array.from({ length: 8 }, (_, i) => claimer(stores[i % stores.length]!, `w${i}`, sends, () => settled(made))));
    expectOneAtATimeInOrder(made, sends, keys, versions);
    expect(sends).toHaveLength(made.size);
  });

  it('ingest and finishes over the same keys at once wait for each other, never deadlock, and keep each key in order', async () => {
    const keys = Array.from({ length: 30 }, (_, i) => 3000 + i);
    const versions = [1, 2, 3, 4];
    const made = new Map<string, { key: number; version: number }>();
    let filled = false;
    const filling = (async () => {
      // In order, one version of every key at a time: each batch of ingest locks many keys while finishes release them.
      for (const version of versions) await fill(keys, [version], made);
      filled = true;
    })();
    const deadlocksBefore = await deadlocks();
    const sends: Send[] = [];
    await Promise.all([
      filling,
      ...Array.from({ length: 6 }, (_, i) => claimer(stores[i % stores.length]!, `x${i}`, sends, async () => filled && (await settled(made)))),
    ]);
    expectOneAtATimeInOrder(made, sends, keys, versions);
    // A deadlock is retried by ingest and the finish alike, so only the server's count tells one happened.
    expect(await deadlocks()).toBe(deadlocksBefore);
  });

  if (engine() === 'postgres') {
    it('a finish that waited for its key releases a task placed behind the head while it waited', async () => {
      const made = await fill([4000], [1]);
      const [head] = [...made.keys()];
      const { tasks: claimed } = await claimTasks(gateway.store.db, { owner: 'waiter', routes: routes(), limit: 10 });
      expect(claimed.map((c) => c.id)).toEqual([head]);
      // Another transaction holds the key and places a task behind its head, held; the finish's statement begins
      // meanwhile, so what it reads with its own snapshot has no such task.
      const kept = await finishHeldUp(claimed[0]!, 'waiter', async (tx) => {
        await tx`select pg_advisory_xact_lock(oncehook_order_lock(source, action, order_key)) from tasks where id = ${head!}`;
        await tx`insert into tasks (id, source, action, event_id, delivery_id, state, body_sha256, order_key, order_mode, order_number)
          select 'behind-4000', source, action, 'behind-4000', delivery_id, 'pending', body_sha256, order_key, order_mode, 2
          from tasks where id = ${head!}`;
      }, 'advisory');
      expect(kept).toEqual([true]);
      expect(await standing('behind-4000')).toEqual({ held: false, due: true });
      // Out of the way of the tests after this one, which claim whatever is due.
      await rows(gateway.store.db, sql`update tasks set state = 'cancelled' where id = 'behind-4000'`);
    });
  }

  if (engine() === 'postgres') {
    it('a finish whose next task a person cancels while it releases it lets the task after that go', async () => {
      const made = await fill([4200], [1, 2, 3]);
      const byVersion = new Map([...made].map(([id, { version }]) => [version, id]));
      const { tasks: claimed } = await claimTasks(gateway.store.db, { owner: 'cancelled-next', routes: routes(), limit: 10 });
      expect(claimed.map((c) => c.id)).toEqual([byVersion.get(1)]);
      // A person's cancel of the next task, not yet committed: it holds that task's row, and no lock of its key. The
      // finish finds the task held, then waits for the cancel before it can release it.
      const kept = await finishHeldUp(claimed[0]!, 'cancelled-next', async (tx) => {
        await tx`update tasks set state = 'cancelled', updated_at = now() where id = ${byVersion.get(2)!}`;
      }, 'transactionid');
      expect(kept).toEqual([true]);
      expect(await standing(byVersion.get(3)!)).toEqual({ held: false, due: true });
      await rows(gateway.store.db, sql`update tasks set state = 'cancelled' where id = ${byVersion.get(3)!}`);
    });
  }

  it("releases the next task after a previous build's finish, which does not release its keys itself", async () => {
    // During a rolling upgrade an instance of the build before the finish released its keys still ends heads with a
    // plain update, unmarked: the settle trigger must release for it, or the key waits for ever.
    const made = await fill([4100], [1, 2]);
    const byVersion = new Map([...made].map(([id, { version }]) => [version, id]));
    const { tasks: claimed } = await claimTasks(gateway.store.db, { owner: 'previous-build', routes: routes(), limit: 10 });
    expect(claimed.map((c) => c.id)).toEqual([byVersion.get(1)]);
    const held = async () => (await rows<{ held: boolean }>(gateway.store.db, sql`select held from tasks where id = ${byVersion.get(2)!}`))[0]!.held;
    expect(await held()).toBe(true);
    await rows(
      gateway.store.db,
      sql`update tasks set state = 'succeeded', lease_owner = null, lease_expires_at = null, updated_at = now() where id = ${byVersion.get(1)!}`,
    );
    expect(await held()).toBe(false);
    await rows(gateway.store.db, sql`update tasks set state = 'cancelled' where id = ${byVersion.get(2)!}`);
  });

  it('a worker that dies holding its keys loses nothing, doubles nothing, and keeps each key in order', async () => {
    const keys = Array.from({ length: 6 }, (_, i) => 2000 + i);
    const versions = [2, 1, 3];
    const made = await fill(keys, versions);
    const short = routes().map((route) => ({ ...route, leaseMs: 100 }));
    const { tasks: dead } = await claimTasks(gateway.store.db, { owner: 'dead', routes: short, limit: 100 });
    // Only each key's head was claimable: version 1 of each.
    expect(dead.map((c) => made.get(c.id)).sort((a, b) => a!.key - b!.key)).toEqual(keys.map((key) => ({ key, version: 1 })));
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect((await reclaimExpiredLeases(gateway.store.db)).map((t) => t.id).sort()).toEqual(dead.map((c) => c.id).sort());

    const sends: Send[] = [];
    await Promise.all(Array.from({ length: 4 }, (_, i) => claimer(stores[i % stores.length]!, `live${i}`, sends, () => settled(made))));
    // The dead worker's sends may have reached the downstream: each is resent under its key (an unknown outcome of
    // a keyed action), before anything after it.
    expectOneAtATimeInOrder(made, sends, keys, versions);
    const [row] = await rows<{ resent: number }>(
      gateway.store.db,
      sql`select count(*)::int as resent from tasks where id in (select jsonb_array_elements_text(${JSON.stringify(dead.map((c) => c.id))}::jsonb)) and attempts = 2`,
    );
    expect(row!.resent).toBe(dead.length);
  });
});
