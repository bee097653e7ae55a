import { randomBytes } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { lockDataDir } from './data-dir-lock.ts';
import { assertDriverRepaired } from './driver-repairs.ts';
import type { Logger } from '../log.ts';
import { clusterTar, type Seeded } from './cluster-image.ts';
import type { DiskSyncs } from './data-dir-flush.ts';
import { openDurablePglite } from './durable-pglite.ts';
import { compiledPglite, pgliteBundle } from './pglite-artifacts.ts';
import { preparing } from './prepared.ts';
import { preparePglite } from './prepared-pglite.ts';
import * as schema from './schema.ts';

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

/**
 * One store, two engines. Everything above this file talks to `db` (drizzle) and never to a driver, so the
 * same code and the same tests run on a PostgreSQL server and on embedded PGlite.
 */
export interface Store {
  readonly kind: 'postgres' | 'pglite';
  readonly db: Db;
  /** Embedded PGlite on disk: its flushes to disk so far (PostgreSQL's own are its business). */
  readonly diskSyncs: DiskSyncs | null;
  /** Calls `onNotify` for every NOTIFY on `channel`; `onSubscribe` after every (re)subscription. */
  listen(channel: string, onNotify: () => void, onSubscribe: () => void): Promise<() => Promise<void>>;
  /** A connection of one writer's own, which it can abandon; see `WriteLane`. */
  lane(): WriteLane;
  close(): Promise<void>;
}

/**
 * Where one writer sends its statements. On PostgreSQL a connection of its own: a statement that never
 * answers (a network path that died without a reset leaves the socket waiting for TCP to give up, ~15
 * minutes by Linux's defaults) can be abandoned with its connection, and the next write opens another,
 * without touching the pool. PGlite runs in this process and has nothing to abandon.
 */
export interface WriteLane {
  readonly kind: Store['kind'];
  /** The lane's database: after `abandon`, a new connection's. */
  readonly db: Db;
  /** Drops the connection; a statement in flight on it fails as a connection error. Null on PGlite. */
  readonly abandon: (() => void) | null;
}

export interface StoreOptions {
  /** A PostgreSQL URL; without it the embedded PGlite is used. */
  databaseUrl?: string | undefined;
  /** PGlite's directory; omitted means in memory (tests only). */
  dataDir?: string | undefined;
  /** In memory only (tests): the cluster to start from, a PGlite dump; by default an empty one. */
  memoryImage?: Blob | undefined;
  /** Connections in the postgres.js pool. */
  poolSize?: number;
  /** Told how a new embedded data directory was made. */
  logger?: Pick<Logger, 'info' | 'warn'> | undefined;
}

export async function openStore(options: StoreOptions): Promise<Store> {
  if (!options.databaseUrl) return openPglite(options.dataDir, options.logger, options.memoryImage);
  await assertDriverRepaired();
  return openPostgres(options.databaseUrl, options.poolSize ?? 10);
}

function openPostgres(url: string, max: number): Store {
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
      lanes.add(async () => {
        closed = true;
        await own?.client.end({ timeout: 5 });
      });
      return {
        kind: 'postgres',
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
    connection: { application_name: applicationName },
  };
}

let pristineCluster: Promise<Blob | undefined> | undefined;

/**
 * An in-memory PGlite (tests only) starting from a freshly initialised cluster: the image a new data directory
 * starts from (cluster-image.ts), unpacked once in a process, or `memoryImage`. The suites make hundreds of these;
 * PGlite's initdb took 2.5–3.5 s of each process's first, unpacking the image ~0.3 s. Without a usable image, the
 * first runs initdb and the rest load its cluster as initdb left it.
 */
async function inMemoryPglite(memoryImage: Blob | undefined): Promise<PGlite> {
  const artifacts = { pgliteWasmModule: await compiledPglite(), fsBundle: await pgliteBundle() };
  pristineCluster ??= clusterTar();
  const image = memoryImage ?? (await pristineCluster.catch(() => undefined));
  if (image) return PGlite.create({ loadDataDir: image, ...artifacts });
  const client = await PGlite.create(artifacts);
  const dumped = client.dumpDataDir('none');
  pristineCluster = dumped;
  try {
    await dumped;
  } catch (error) {
    await client.close();
    throw error;
  }
  return client;
}

async function openPglite(dataDir: string | undefined, logger: StoreOptions['logger'], memoryImage: Blob | undefined): Promise<Store> {
  let client: PGlite;
  let diskSyncs: DiskSyncs | null = null;
  let release = () => {};
  if (dataDir) {
    release = lockDataDir(dataDir);
    try {
      let seeded: Seeded;
      ({ client, syncs: diskSyncs, seeded } = await openDurablePglite(dataDir));
      if (seeded.from === 'image') logger?.info(`a new data directory: its cluster came from the image shipped with oncehook`);
      if (seeded.from === 'initdb') logger?.warn({ reason: seeded.reason }, `a new data directory: PGlite's initdb made its cluster, which takes about 1 GiB of memory for a few seconds`);
    } catch (error) {
      release();
      throw error;
    }
  } else {
    client = await inMemoryPglite(memoryImage);
  }
  preparePglite(client);
  const db = drizzlePglite(client, { schema }) as unknown as Db;
  return {
    kind: 'pglite',
    db,
    diskSyncs,
    async listen(channel, onNotify, onSubscribe) {
      const unlisten = await client.listen(channel, onNotify);
      // In-process: the subscription never drops, so one catch-up fetch is all a worker needs.
      onSubscribe();
      return () => unlisten();
    },
    lane() {
      return { kind: 'pglite', db, abandon: null };
    },
    async close() {
      if (!client.closed) await client.close();
      release();
    },
  };
}
