import { fileURLToPath } from 'node:url';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import { sql } from 'drizzle-orm';
import type { PgliteDatabase } from 'drizzle-orm/pglite';
import postgres from 'postgres';
import type { Store } from './connect.ts';
import { settleWithin } from './lane.ts';
import { rowsOf } from './rows.ts';

export const MIGRATIONS_FOLDER = fileURLToPath(new URL('./migrations', import.meta.url));

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
 * Applies drizzle-kit's migrations. On PostgreSQL several instances may start at once: each takes a
 * session advisory lock on a connection of its own, so one migrates and the others find nothing left to do.
 * `migrationsFolder` is oncehook's own; the upgrade tests pass an earlier release's.
 */
export async function migrate(store: Store, databaseUrl?: string, migrationsFolder = MIGRATIONS_FOLDER): Promise<Migrated> {
  if (store.kind === 'pglite') {
    const before = await recorded(store.db);
    await migratePglite(store.db as unknown as PgliteDatabase, { migrationsFolder });
    return migrated(before, await recorded(store.db));
  }
  if (!databaseUrl) throw new Error('migrating PostgreSQL needs its URL');
  return migratePostgresAt(databaseUrl, migrationsFolder);
}

/** The PostgreSQL half of `migrate`, for a database no store is open on (`copy-data`'s target). */
export async function migratePostgresAt(databaseUrl: string, migrationsFolder = MIGRATIONS_FOLDER): Promise<Migrated> {
  const client = postgres(databaseUrl, { max: 1, onnotice: () => {}, connect_timeout: 10, fetch_types: false });
  try {
    await firstContact(client`select 1`, FIRST_CONTACT_MS);
    await client`select pg_advisory_lock(${MIGRATION_LOCK})`;
    const db = drizzlePostgres(client);
    const before = await recorded(db);
    await migratePostgres(db, { migrationsFolder });
    return migrated(before, await recorded(db));
  } finally {
    await client.end({ timeout: 5 });
  }
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
