import { createServer, type AddressInfo, type Socket } from 'node:net';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/connect.ts';
import { migrate } from '../../src/store/migrate.ts';
import { onLane, settleWithin } from '../../src/store/lane.ts';
import { isRetryable, isUnreachable } from '../../src/store/retryable.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { waitFor } from '../support/forwarding.ts';
import { startReplicatedPostgres, type ReplicatedPostgres } from '../support/replicated-postgres.ts';

/**
 * The store against a multi-host DATABASE_URL, `?target_session_attrs=read-write`, as docs/deploying.md says to
 * give it a primary and its standby: the connections the gateway opens (its pool, a lane, its LISTEN) go to the
 * primary whichever host is listed first. Each case here is a repair to postgres.js (scripts/patch-postgres.mjs)
 * that the failover test (failover.test.ts) needs, tried on its own.
 */
let pair: ReplicatedPostgres;
/** Every store and client the tests open, closed at the end. */
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  pair = await startReplicatedPostgres({ replication: 'async' });
});
afterAll(async () => {
  await Promise.all(closers.map((close) => close()));
  await pair?.destroy();
});

/** A URL naming both servers, in the order given, that only a primary may answer. */
function readWrite(...urls: string[]): string {
  return `postgres://postgres@${urls.map((url) => new URL(url).host).join(',')}/postgres?target_session_attrs=read-write`;
}

async function open(url: string): Promise<Store> {
  const store = await openStore({ databaseUrl: url, poolSize: 2 });
  closers.push(() => store.close());
  return store;
}

const onPrimary = async (db: Store['db']) => (await rowsOf<{ standby: boolean }>(db, sql`select pg_is_in_recovery() as standby`))[0]!.standby === false;

describe('a multi-host DATABASE_URL with target_session_attrs=read-write', () => {
  it('skips a hot standby listed first: the pool, a lane, the migrations and LISTEN all reach the primary', async () => {
    const url = readWrite(pair.standbyUrl, pair.primaryUrl);
    const store = await open(url);
    // A standby reports default_transaction_read_only = off; the driver took it for a primary.
    await migrate(store, url);
    expect(await onPrimary(store.db)).toBe(true);
    expect(await onPrimary(store.lane().db)).toBe(true);

    let notified = 0;
    let subscribed = 0;
    await store.listen('oncehook_multi_host', () => notified++, () => subscribed++);
    expect(subscribed).toBe(1);
    const notifier = postgres(pair.primaryUrl, { max: 1, onnotice: () => {}, fetch_types: false });
    try {
      await notifier`select pg_notify('oncehook_multi_host', '')`;
      await waitFor(() => notified > 0, 5000);
    } finally {
      await notifier.end();
    }
  });

  it('passes over a host that never answers, after connect_timeout, to the next', async () => {
    // A dead machine whose address nobody answers for: the connection neither opens nor is refused. (A server that
    // takes the TCP connection and says nothing times out the same way, and is what this machine can make.)
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => void sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const silentUrl = `postgres://127.0.0.1:${(silent.address() as AddressInfo).port}`;
      const store = await open(readWrite(silentUrl, pair.primaryUrl));
      const started = performance.now();
      // Without the repair the statement failed with CONNECT_TIMEOUT after the 5 s, and so did the next
      // reconnect's, every time the connection's round began at the silent host.
      expect(await onPrimary(store.db)).toBe(true);
      expect(performance.now() - started).toBeGreaterThan(4000);
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  }, 20_000);

  describe('when the primary dies', () => {
    /** Opened while the primary lived, LISTENing: what a running gateway holds when its primary dies. */
    let store: Store;
    let notified = 0;
    let subscribed = 0;
    /** The standby's own count of the sessions it has had. */
    let standbySessions: () => Promise<number>;

    beforeAll(async () => {
      store = await open(readWrite(pair.primaryUrl, pair.standbyUrl));
      await store.listen('oncehook_failover', () => notified++, () => subscribed++);
      const standby = postgres(pair.standbyUrl, { max: 1, onnotice: () => {}, fetch_types: false });
      standbySessions = async () => (await standby<{ n: number }[]>`select sessions::int as n from pg_stat_database where datname = 'postgres'`)[0]!.n;
      closers.push(() => standby.end());
      await pair.killPrimary();
    });

    it('fails a statement at once while no primary answers, and asks the standby about once a second per connection', async () => {
      const before = await standbySessions();
      const started = performance.now();
      let failures = 0;
      // A statement, and on its failure the next, for two seconds: ingest's retries and the worker's passes.
      while (performance.now() - started < 2000) {
        const error = await settleWithin(store.db.execute(sql`select 1`), 3000, () => new Error('no answer in 3 s: the driver kept going from host to host')).then(
          () => new Error('a statement was answered with no primary up'),
          (e: unknown) => e,
        );
        // Unreachable or a connection lost: the gateway answers 503 and tries again.
        expect(isRetryable(error) || isUnreachable(error), String(error)).toBe(true);
        failures++;
      }
      expect(failures).toBeGreaterThan(1);
      // Each attempt tries the dead primary, then the standby once; between attempts each connection backs off, up
      // to a second: 18 sessions in these two seconds for the pool's two connections and the LISTEN one. Without
      // that one connection asked the standby ~250 times in two seconds.
      expect((await standbySessions()) - before).toBeLessThan(30);
    });

    it("keeps a lane's connection while no host is a primary, so ingest's tries are spaced too", async () => {
      // Ingest and the worker give up a connection that failed in use and go on at once on a new one; a host
      // that target_session_attrs refuses is no such failure. Counted as one (CONNECTION_DESTROYED), every try
      // of a writer opened a new connection to the standby at once: 50-90 a second under the failover test's load.
      const lane = store.lane();
      const before = await standbySessions();
      const started = performance.now();
      let tries = 0;
      while (performance.now() - started < 2000) {
        const error = await onLane(lane, undefined, lane.db.execute(sql`select 1`)).then(
          () => new Error('a statement was answered with no primary up'),
          (e: unknown) => e,
        );
        expect(isUnreachable(error), String(error)).toBe(true);
        tries++;
        await new Promise((resolve) => setImmediate(resolve));
      }
      // One connection backing off, plus the pool's two and the LISTEN one doing the same.
      expect(tries).toBeGreaterThan(1);
      expect((await standbySessions()) - before).toBeLessThan(30);
    });

    it('reaches the promoted standby by itself: the pool, a lane and LISTEN', async () => {
      await pair.promote();
      await waitFor(() => store.db.execute(sql`select 1`).then(() => true, () => false), 5000);
      expect(await onPrimary(store.db)).toBe(true);
      expect(await onPrimary(store.lane().db)).toBe(true);
      await waitFor(() => subscribed >= 2, 5000);
      const notifier = postgres(pair.standbyUrl, { max: 1, onnotice: () => {}, fetch_types: false });
      try {
        await notifier`select pg_notify('oncehook_failover', '')`;
        await waitFor(() => notified > 0, 5000);
      } finally {
        await notifier.end();
      }
    });
  });
});
