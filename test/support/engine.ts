import { randomBytes } from 'node:crypto';
import postgres, { type TransactionSql } from 'postgres';
import { openStore, type Store } from '../../src/store/connect.ts';
import { migrate } from '../../src/store/migrate.ts';

/** The PostgreSQL every test run uses. A test that needs it fails when it is down; it never skips. */
export const PG_ADMIN_URL = process.env.ONCEHOOK_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432/test';

export type Engine = 'postgres' | 'pglite';

/** The engine this project runs on: `npm test` runs test/integration once per engine. */
export function engine(): Engine {
  const chosen = process.env.ONCEHOOK_TEST_DB;
  if (chosen !== 'postgres' && chosen !== 'pglite') {
    throw new Error(`ONCEHOOK_TEST_DB must be "postgres" or "pglite", not ${JSON.stringify(chosen)}`);
  }
  return chosen;
}

export interface TestDatabase {
  /** Set on PostgreSQL: a database of its own, created for this test file. */
  url: string | undefined;
  drop(): Promise<void>;
}

/** A fresh, empty PostgreSQL database; dropped (with its connections) by `drop`. */
export async function freshPostgresDatabase(): Promise<TestDatabase> {
  const name = `oncehook_t_${randomBytes(6).toString('hex')}`;
  const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  try {
    await admin.unsafe(`create database ${name}`);
  } catch (error) {
    await admin.end();
    throw new Error(`PostgreSQL at ${PG_ADMIN_URL} is needed by this test: ${(error as Error).message}`);
  }
  await admin.end();
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const again = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} });
      await again.unsafe(`drop database if exists ${name} with (force)`);
      await again.end();
    },
  };
}

/** A fresh database on this project's engine: its own PostgreSQL database, or a PGlite in memory. */
export async function freshDatabase(): Promise<TestDatabase> {
  if (engine() === 'postgres') return freshPostgresDatabase();
  return { url: undefined, drop: async () => {} };
}

export interface TestStore {
  store: Store;
  database: TestDatabase;
  close(): Promise<void>;
}

/** A migrated store on a fresh database of this project's engine. */
export async function freshStore(): Promise<TestStore> {
  const database = await freshDatabase();
  const store = await openStore({ databaseUrl: database.url });
  await migrate(store, database.url);
  return {
    store,
    database,
    async close() {
      await store.close();
      await database.drop();
    },
  };
}

export interface HeldTransaction {
  /** The session the transaction runs on, for reading after the commit. */
  session: postgres.Sql;
  commit(): Promise<void>;
  end(): Promise<void>;
}

/**
 * Runs `work` in a transaction on a session of its own and keeps the transaction open until `commit`: a writer
 * that started before others and commits after them. Needs a server, not the single-session embedded PGlite.
 */
export async function holdTransaction(url: string, work: (tx: TransactionSql) => Promise<unknown>): Promise<HeldTransaction> {
  const session = postgres(url, { max: 1, onnotice: () => {} });
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let worked!: () => void;
  const workedYet = new Promise<void>((resolve) => (worked = resolve));
  const transaction = session.begin(async (tx) => {
    await work(tx);
    worked();
    await released;
  });
  await Promise.race([workedYet, transaction]);
  return {
    session,
    async commit() {
      release();
      await transaction;
    },
    end: () => session.end(),
  };
}
