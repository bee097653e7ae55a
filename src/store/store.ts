import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import type { Logger } from '../log.ts';
import type { DiskSyncs } from './data-dir-flush.ts';
import type * as schema from './schema.ts';

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

/**
 * One store, two engines. Everything above the store talks to `db` (drizzle) and never to a driver, so the
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
  /**
   * Ends the lane's connection once its statement in flight is answered: a writer that stops before the store
   * closes (a forwarder replaced by a reload) would otherwise hold a connection until then.
   */
  close(): Promise<void>;
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
