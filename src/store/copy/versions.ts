import { readMigrationFiles } from 'drizzle-orm/migrator';
import { MIGRATIONS_FOLDER } from '../migrate.ts';
import type { Query } from './catalog.ts';

/** The migrations this build knows, each named by the time drizzle-kit gave it, which drizzle records when applied. */
export function knownMigrations(migrationsFolder = MIGRATIONS_FOLDER): number[] {
  return readMigrationFiles({ migrationsFolder }).map((m) => m.folderMillis);
}

/** The migrations a database has applied, in order; none before drizzle's table exists. */
export async function appliedMigrations(query: Query): Promise<number[]> {
  const [table] = await query<{ present: boolean }>(`select to_regclass('drizzle.__drizzle_migrations') is not null as present`);
  if (!table?.present) return [];
  const rows = await query<{ at: string }>(`select created_at::text as at from drizzle.__drizzle_migrations order by created_at`);
  return rows.map((r) => Number(r.at));
}

/**
 * Where a database stands beside this build: `same` migrations, `older` (a beginning of this build's), `newer`
 * (this build's and more), or `different` (neither: another branch's).
 */
export type Standing = 'same' | 'older' | 'newer' | 'different';

export function standing(applied: readonly number[], known: readonly number[]): Standing {
  const shared = Math.min(applied.length, known.length);
  for (let i = 0; i < shared; i++) if (applied[i] !== known[i]) return 'different';
  if (applied.length === known.length) return 'same';
  return applied.length < known.length ? 'older' : 'newer';
}
