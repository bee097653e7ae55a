import { randomBytes } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PGlite } from '@electric-sql/pglite';
import postgres, { type TransactionSql } from 'postgres';
import { openStore, type Store } from '../../src/store/connect.ts';
import { migrate, migratePostgresAt } from '../../src/store/migrate.ts';
import { treeHash } from './tree-hash.ts';

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
  /** Set on PGlite when the database starts migrated: the migrated cluster an in-memory store starts from. */
  memoryImage?: Blob;
  drop(): Promise<void>;
}

const adminClient = () => postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {}, connect_timeout: 5 });

/** The name of the test run its global setup gave it (test/support/run-databases.ts). */
export const RUN_ENV = 'ONCEHOOK_TEST_RUN';

/** Where a run's workers write the name of each database they make, one a line, for the run's end to drop. */
export const runDatabasesFile = (run: string) => join(tmpdir(), `oncehook-test-run-${run}.databases`);

/**
 * A fresh PostgreSQL database, empty or a copy of `template`. `drop` ends its connections and refuses new ones; in a
 * run, the run's global setup drops it at the end, with the run's others; outside one (scripts), `drop` drops it.
 */
export async function freshPostgresDatabase(template?: string): Promise<TestDatabase> {
  const run = process.env[RUN_ENV];
  const name = `oncehook_t_${run ? `${run}_` : ''}${randomBytes(6).toString('hex')}`;
  const admin = adminClient();
  try {
    await admin.unsafe(`create database ${name}${template ? ` template ${template}` : ''}`);
  } catch (error) {
    await admin.end();
    throw new Error(`PostgreSQL at ${PG_ADMIN_URL} is needed by this test: ${(error as Error).message}`);
  }
  await admin.end();
  if (run) appendFileSync(runDatabasesFile(run), `${name}\n`);
  return {
    url: databaseUrl(name),
    async drop() {
      const again = adminClient();
      try {
        if (!run) await again.unsafe(`drop database if exists ${name} with (force)`);
        else {
          await again.unsafe(`alter database ${name} allow_connections false`);
          await again`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${name}`;
        }
      } finally {
        await again.end();
      }
    },
  };
}

function databaseUrl(name: string): string {
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Every file the migrator applies, named and hashed: a template is made again whenever one changes. */
function schemaHash(): string {
  return treeHash(fileURLToPath(new URL('../../src/store/', import.meta.url)), [], /\.(sql|json)$/).slice(0, 16);
}

/** A lock of the test runs' own, held while a template is made. */
const TEMPLATE_LOCK = 4_207_311_777;
let template: Promise<string> | undefined;

/**
 * A migrated PostgreSQL database that fresh ones are copied from: migrating takes most of a fresh store's time, and
 * the suites make hundreds. Made once per schema (named by its hash) by whichever test process asks first, under a
 * lock the others wait on, and renamed into place only once migrated. Kept for the next run.
 */
function migratedTemplate(): Promise<string> {
  template ??= (async () => {
    const name = `oncehook_tpl_${schemaHash()}`;
    const admin = adminClient();
    try {
      await admin`select pg_advisory_lock(${TEMPLATE_LOCK})`;
      const [found] = await admin`select 1 from pg_database where datname = ${name}`;
      if (!found) {
        // A template half made by a run that was killed holds no lock: nobody uses it.
        for (const { datname } of await admin`select datname from pg_database where datname ~ '^oncehook_tpl_[0-9a-f]+_building$'`) {
          await admin.unsafe(`drop database if exists ${datname as string} with (force)`);
        }
        const building = `${name}_building`;
        await admin.unsafe(`create database ${building}`);
        await migratePostgresAt(databaseUrl(building));
        await admin.unsafe(`alter database ${building} rename to ${name}`);
      }
      return name;
    } finally {
      await admin.end();
    }
  })();
  template.catch(() => (template = undefined));
  return template;
}

let memoryImage: Promise<Blob> | undefined;

/** The in-memory PGlite's counterpart of migratedTemplate: a migrated cluster, dumped once in a process. */
function migratedMemoryImage(): Promise<Blob> {
  memoryImage ??= (async () => {
    const store = await openStore({});
    try {
      await migrate(store, undefined);
      return await (store.db as unknown as { $client: PGlite }).$client.dumpDataDir('none');
    } finally {
      await store.close();
    }
  })();
  memoryImage.catch(() => (memoryImage = undefined));
  return memoryImage;
}

/**
 * A fresh database on this project's engine: its own PostgreSQL database, or a PGlite in memory. `migrated`: with
 * oncehook's schema already in it, as `migrate` would leave it (a later `migrate` finds nothing to do).
 */
export async function freshDatabase(options: { migrated?: boolean } = {}): Promise<TestDatabase> {
  if (engine() === 'postgres') return freshPostgresDatabase(options.migrated ? await migratedTemplate() : undefined);
  return { url: undefined, ...(options.migrated ? { memoryImage: await migratedMemoryImage() } : {}), drop: async () => {} };
}

export interface TestStore {
  store: Store;
  database: TestDatabase;
  close(): Promise<void>;
}

/** A migrated store on a fresh database of this project's engine. */
export async function freshStore(): Promise<TestStore> {
  const database = await freshDatabase({ migrated: true });
  const store = await openStore({ databaseUrl: database.url, memoryImage: database.memoryImage });
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
