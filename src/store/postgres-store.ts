import { randomBytes } from 'node:crypto';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { preparing } from './prepared.ts';
import * as schema from './schema.ts';
import type { Db, Store } from './store.ts';

/** A store on a PostgreSQL server (connect.ts), through a pool of `max` connections. */
export function openPostgres(url: string, max: number): Store {
  const client = postgres(url, clientOptions(max));
  const db = drizzlePostgres(preparing(client), { schema }) as unknown as Db;
  const lanes = new Set<() => Promise<void>>();
  const listeners = new Set<postgres.Sql>();
  return {
    kind: 'postgres',
    db,
    diskSyncs: null,
    async listen(channel, onNotify, onSubscribe) {
      // A client of its own for each subscription. The driver keeps a LISTEN that failed as the channel's state,
      // and answered every later LISTEN on it with that same failure (measured: for 96 s after a restart, while
      // the database was back), so a start that waited for the database never got its subscription. A failed one
      // is dropped with its client; the next try starts clean.
      const listener = postgres(url, clientOptions(1, 'oncehook listen'));
      listeners.add(listener);
      const end = async (timeout: number) => {
        listeners.delete(listener);
        await listener.end({ timeout });
      };
      try {
        const { unlisten } = await listener.listen(channel, onNotify, onSubscribe);
        return async () => {
          await unlisten();
          await end(5);
        };
      } catch (error) {
        await end(0).catch(() => {});
        throw error;
      }
    },
    lane() {
      let own: { client: postgres.Sql; db: Db; name: string } | null = null;
      let closed = false;
      const open = () => {
        // A name of its own, so that the server side of an abandoned connection can be found and ended.
        const name = `oncehook lane ${randomBytes(4).toString('hex')}`;
        const laneClient = postgres(url, clientOptions(1, name));
        return { client: laneClient, db: drizzlePostgres(preparing(laneClient), { schema }) as unknown as Db, name };
      };
      const close = async () => {
        closed = true;
        lanes.delete(close);
        await own?.client.end({ timeout: 5 });
      };
      lanes.add(close);
      return {
        kind: 'postgres',
        close,
        get db() {
          // After close, a client opened here would never be ended; the write fails as on a closed pool.
          if (closed) throw Object.assign(new Error('the store is closed'), { code: 'CONNECTION_ENDED' });
          own ??= open();
          return own.db;
        },
        abandon() {
          const abandoned = own;
          own = null;
          if (!abandoned) return;
          // No wait for an answer that is not coming: the statement in flight fails with CONNECTION_DESTROYED.
          void abandoned.client.end({ timeout: 0 }).catch(() => {});
          // A server still alive (a lock wait, a stuck disk) does not notice the closed socket while its
          // statement runs, and would keep its connection slot and its locks while each new try queued behind
          // it. Ended through the pool; on a dead network this fails too, and TCP ends both sides in time.
          void terminateBackends(client, abandoned.name);
        },
      };
    },
    async close() {
      await Promise.all([client.end({ timeout: 5 }), ...[...lanes].map((end) => end()), ...[...listeners].map((l) => l.end({ timeout: 5 }))]);
    },
  };
}

/** Ends the server side of the connections named `applicationName`, giving up after a few seconds. */
async function terminateBackends(pool: postgres.Sql, applicationName: string): Promise<void> {
  const ending = pool`select pg_terminate_backend(pid) from pg_stat_activity
    where application_name = ${applicationName} and pid <> pg_backend_pid()`;
  const giveUp = new Promise<void>((resolve) => setTimeout(resolve, 5000).unref());
  await Promise.race([ending.then(() => {}), giveUp]).catch(() => {});
}

function clientOptions(max: number, applicationName = 'oncehook'): postgres.Options<Record<string, postgres.PostgresType>> {
  return {
    max,
    onnotice: () => {},
    connect_timeout: 5,
    idle_timeout: 60,
    // The array-type lookup runs on every new connection, and while the database is down its failure
    // escapes as an unhandled rejection; oncehook uses no array columns, so it is not needed.
    fetch_types: false,
    // The driver's default waits up to 20 s between reconnects, its retry count shared by the pool and raised
    // by every refused connection: after a one-second restart, ingest kept answering 503 for many seconds
    // more. A second at most keeps reconnects cheap and recovery prompt.
    backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 1) * (0.5 + Math.random() / 2),
    // JIT compiles a plan past its cost threshold, which the dashboard's count of a day passes once it holds a few
    // hundred thousand rows: on ten million tasks of history it spent ~0.8 s compiling a 0.4 s count
    // (docs/performance.md#growth). Nothing oncehook runs is long enough to earn it back.
    connection: { application_name: applicationName, jit: 'off' },
  };
}
