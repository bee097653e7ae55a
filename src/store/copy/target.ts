import { getTableName, is } from 'drizzle-orm';
import { PgTable } from 'drizzle-orm/pg-core';
import * as schema from '../schema.ts';
import type { Query } from './catalog.ts';
import { ident } from './sql-text.ts';

/** The tables oncehook's migrations make, by the schema they are generated from. */
export const OWN_TABLES: readonly string[] = Object.values(schema)
  .filter((value) => is(value, PgTable))
  .map((table) => getTableName(table as PgTable));

/**
 * Tables, views and foreign tables of the target that are not oncehook's, as `schema.name`. The system's own and
 * those of installed extensions (pg_stat_statements' view, PostGIS's spatial_ref_sys) do not count.
 */
export async function foreignRelations(query: Query): Promise<string[]> {
  const rows = await query<{ name: string }>(
    `select format('%I.%I', n.nspname, c.relname) as name
     from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where c.relkind in ('r', 'p', 'v', 'm', 'f')
       and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg\\_%'
       and not exists (select 1 from pg_depend d where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype = 'e')
       and not (n.nspname = current_schema() and c.relname in (select jsonb_array_elements_text($1::text::jsonb)))
       and not (n.nspname = 'drizzle' and c.relname in ('__drizzle_migrations', 'oncehook_functions'))
     order by 1`,
    [JSON.stringify(OWN_TABLES)],
  );
  return rows.map((r) => r.name);
}

/** Which of `tables` (in the current schema; those absent are left out) hold at least one row. */
export async function tablesWithRows(query: Query, tables: readonly string[]): Promise<string[]> {
  const present = await query<{ name: string }>(
    `select relname as name from pg_class
     where relnamespace = current_schema()::regnamespace and relkind in ('r', 'p')
       and relname in (select jsonb_array_elements_text($1::text::jsonb))
     order by relname`,
    [JSON.stringify(tables)],
  );
  if (present.length === 0) return [];
  const probes = present.map((_, i) => `select $${i + 1}::text as name where exists (select 1 from ${ident(present[i]!.name)})`);
  const rows = await query<{ name: string }>(probes.join('\nunion all\n'), present.map((p) => p.name));
  return rows.map((r) => r.name);
}

/**
 * The other sessions on the target that oncehook opened (its connections name themselves `oncehook…`): a gateway
 * already running on the database the copy is meant to fill.
 */
export async function oncehookSessions(query: Query): Promise<number[]> {
  const rows = await query<{ pid: number }>(
    `select pid from pg_stat_activity
     where datname = current_database() and pid <> pg_backend_pid() and application_name like 'oncehook%'
     order by pid`,
  );
  return rows.map((r) => r.pid);
}
