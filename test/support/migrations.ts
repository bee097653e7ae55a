import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import type { Db } from '../../src/store/connect.ts';
import { MIGRATIONS_FOLDER, type Release } from '../../src/store/migrate.ts';
import { rowsOf } from '../../src/store/rows.ts';

/**
 * The migrations that once created the database functions, as they shipped: the functions have since moved to
 * src/store/functions/, and these files were left with none. A database made by an earlier release ran them whole.
 */
const SHIPPED = JSON.parse(readFileSync(new URL('./shipped-migrations.json', import.meta.url), 'utf8')) as Record<string, string>;

/** The last migration of the releases whose migrations created the functions, and that had no folder of them. */
const LAST_WITHOUT_FUNCTIONS = '0021_record_known_deliveries';

/** What a release that stopped at migration `last` migrated with: its migrations as they shipped, and no functions. */
export function releasedUpTo(last: string): Release {
  return migrationsUpTo(last, true);
}

/**
 * The migrations up to `last` alone, without the database functions of the release that stopped there: for a test
 * that writes that release's rows by hand, and calls none of its functions. `shipped`: the files as they shipped.
 */
export function migrationsUpTo(last: string, shipped = false): Release {
  const dir = mkdtempSync(join(tmpdir(), 'oncehook-migrations-'));
  cpSync(MIGRATIONS_FOLDER, dir, { recursive: true });
  if (shipped) for (const [file, text] of Object.entries(SHIPPED)) writeFileSync(join(dir, file), text);
  const journalFile = join(dir, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalFile, 'utf8')) as { entries: { tag: string }[] };
  const upTo = journal.entries.findIndex((entry) => entry.tag === last);
  if (upTo < 0) throw new Error(`no migration ${last}`);
  if (shipped && upTo > journal.entries.findIndex((entry) => entry.tag === LAST_WITHOUT_FUNCTIONS)) {
    throw new Error(`a release after ${LAST_WITHOUT_FUNCTIONS} had database functions of its own, which this does not hold`);
  }
  journal.entries = journal.entries.slice(0, upTo + 1);
  writeFileSync(journalFile, JSON.stringify(journal));
  return { migrationsFolder: dir, functionsFolder: null };
}

/**
 * The schema as the catalog describes it: every oncehook_ function as pg_get_functiondef writes it, the triggers,
 * indexes, constraints, columns and table options.
 */
export async function schemaOf(db: Db): Promise<string[]> {
  const rows = await rowsOf<{ line: string }>(
    db,
    sql`select 'function ' || pg_get_functiondef(p.oid) as line from pg_proc p
          where p.pronamespace = current_schema()::regnamespace and p.proname like 'oncehook\_%'
        union all select 'trigger ' || pg_get_triggerdef(g.oid) from pg_trigger g
          join pg_class c on c.oid = g.tgrelid where c.relnamespace = current_schema()::regnamespace and not g.tgisinternal
        union all select 'index ' || indexdef from pg_indexes where schemaname = current_schema()
        union all select 'constraint ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid) from pg_constraint
          where connamespace = current_schema()::regnamespace
        union all select format('column %s.%s %s %s %s %s', table_name, column_name, ordinal_position, data_type, is_nullable,
            coalesce(column_default, '')) from information_schema.columns where table_schema = current_schema()
        union all select format('table %s %s', relname, reloptions) from pg_class
          where relnamespace = current_schema()::regnamespace and relkind in ('r', 'p')`,
  );
  return rows.map((row) => row.line).sort();
}
