import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import type { PgliteDatabase } from 'drizzle-orm/pglite';
import type { Db, Store } from './connect.ts';
import { appliedFunctions, applyFunctions, FUNCTIONS_FOLDER, functionsToApply, readFunctions } from './functions.ts';
import { settleWithin } from './lane.ts';
import { rowsOf } from './rows.ts';

export const MIGRATIONS_FOLDER = fileURLToPath(new URL('./migrations', import.meta.url));

/** What a release migrates with: drizzle-kit's migrations, then its database functions (null before they had a folder). */
export interface Release {
  migrationsFolder: string;
  functionsFolder: string | null;
}

export const THIS_RELEASE: Release = { migrationsFolder: MIGRATIONS_FOLDER, functionsFolder: FUNCTIONS_FOLDER };

/**
 * How long the first statement may take. A host that accepts the connection and closes it during start-up
 * (not PostgreSQL, a proxy with nothing behind it) has the driver reconnecting for ever, and `migrate`, or
 * a deploy's release command, hung with it.
 */
const FIRST_CONTACT_MS = 20_000;

/** `contact`, or a CONNECT_TIMEOUT failure after `ms`: the start then says there was no answer. */
export function firstContact<T>(contact: PromiseLike<T>, ms: number): Promise<T> {
  return settleWithin(contact, ms, () => Object.assign(new Error(`no answer from PostgreSQL within ${ms} ms`), { code: 'CONNECT_TIMEOUT' }));
}

/** Shared by every oncehook instance: the key of the advisory lock that serializes migrations. */
const MIGRATION_LOCK = 4_207_311_001;

/**
 * Applies drizzle-kit's migrations, then the database functions whose revision changed (functions.ts), each step in
 * a transaction of its own. A database whose functions a newer release wrote is refused before anything is applied.
 * On PostgreSQL several instances may start at once: each takes a session advisory lock on a connection of its own,
 * so one migrates and the others find nothing left to do. `release` is oncehook's own; the upgrade tests pass an
 * earlier release's.
 */
export async function migrate(store: Store, databaseUrl?: string, release = THIS_RELEASE): Promise<Migrated> {
  // Each engine's migrator is imported only when it runs, as each driver is (connect.ts).
  if (store.kind === 'pglite') return migratePglite(store.db, release);
  if (!databaseUrl) throw new Error('migrating PostgreSQL needs its URL');
  return migratePostgresAt(databaseUrl, release);
}

/** The PGlite half of `migrate`, for a database no store is open on (the migrated cluster image's). */
export async function migratePglite(db: Db, release = THIS_RELEASE): Promise<Migrated> {
  const { migrate: versioned } = await import('drizzle-orm/pglite/migrator');
  return migrateOn(db, release, () => versioned(db as unknown as PgliteDatabase, { migrationsFolder: release.migrationsFolder }));
}

/** The PostgreSQL half of `migrate`, for a database no store is open on (`copy-data`'s target). */
export async function migratePostgresAt(databaseUrl: string, release = THIS_RELEASE): Promise<Migrated> {
  const [{ default: postgres }, { drizzle: drizzlePostgres }, { migrate: migratePostgres }] = await Promise.all([
    import('postgres'),
    import('drizzle-orm/postgres-js'),
    import('drizzle-orm/postgres-js/migrator'),
  ]);
  const client = postgres(databaseUrl, { max: 1, onnotice: () => {}, connect_timeout: 10, fetch_types: false });
  try {
    await firstContact(client`select 1`, FIRST_CONTACT_MS);
    await client`select pg_advisory_lock(${MIGRATION_LOCK})`;
    const db = drizzlePostgres(client);
    return await migrateOn(db as unknown as Db, release, () => migratePostgres(db, { migrationsFolder: release.migrationsFolder }));
  } finally {
    await client.end({ timeout: 5 });
  }
}

async function migrateOn(db: Pick<Db, 'execute' | 'transaction'>, release: Release, versioned: () => Promise<void>): Promise<Migrated> {
  const functions = release.functionsFolder === null ? [] : functionsToApply(readFunctions(release.functionsFolder), await appliedFunctions(db));
  const before = await recorded(db);
  await versioned();
  await applyFunctions(db, functions);
  return migrated(before, await recorded(db));
}

/** What a migration run did: how many it applied now, and how many the database holds in all. */
export interface Migrated {
  applied: number;
  total: number;
}

const migrated = (before: number, after: number): Migrated => ({ applied: after - before, total: after });

/** The migrations drizzle has recorded as applied; none before its table exists. */
async function recorded(db: Pick<Store['db'], 'execute'>): Promise<number> {
  const [table] = await rowsOf<{ present: boolean }>(db, sql`select to_regclass('drizzle.__drizzle_migrations') is not null as present`);
  if (!table?.present) return 0;
  const [row] = await rowsOf<{ n: number }>(db, sql`select count(*)::int as n from drizzle.__drizzle_migrations`);
  return row?.n ?? 0;
}
