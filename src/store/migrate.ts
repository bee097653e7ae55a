import { fileURLToPath } from 'node:url';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import type { PgliteDatabase } from 'drizzle-orm/pglite';
import postgres from 'postgres';
import type { Store } from './connect.ts';

export const MIGRATIONS_FOLDER = fileURLToPath(new URL('./migrations', import.meta.url));

/** Shared by every oncehook instance: the key of the advisory lock that serializes migrations. */
const MIGRATION_LOCK = 4_207_311_001;

/**
 * Applies drizzle-kit's migrations. On PostgreSQL several instances may start at once: each takes a
 * session advisory lock on a connection of its own, so one migrates and the others find nothing left to do.
 * `migrationsFolder` is oncehook's own; the upgrade tests pass an earlier release's.
 */
export async function migrate(store: Store, databaseUrl?: string, migrationsFolder = MIGRATIONS_FOLDER): Promise<void> {
  if (store.kind === 'pglite') {
    await migratePglite(store.db as unknown as PgliteDatabase, { migrationsFolder });
    return;
  }
  if (!databaseUrl) throw new Error('migrating PostgreSQL needs its URL');
  const client = postgres(databaseUrl, { max: 1, onnotice: () => {}, connect_timeout: 10, fetch_types: false });
  try {
    await client`select pg_advisory_lock(${MIGRATION_LOCK})`;
    await migratePostgres(drizzlePostgres(client), { migrationsFolder });
  } finally {
    await client.end({ timeout: 5 });
  }
}
