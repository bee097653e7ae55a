import { sql } from 'drizzle-orm';
import type { Db } from '../../src/store/connect.ts';
import { rowsOf } from '../../src/store/rows.ts';

/**
 * Every row of every table in the database's schema, as JSON text, sorted, per table. Read independently of
 * copy-data's own catalog and checks: the information schema lists the tables, and each row is the engine's own
 * JSON of it. A transaction ID is replaced by its rank among its column's: moved to another server, the rows keep
 * the order of their transactions, not the numbers.
 */
export async function everyRow(db: Db): Promise<Record<string, string[]>> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`set local timezone = 'UTC'`);
    const columns = await rowsOf<{ table: string; column: string; xid8: boolean }>(
      tx,
      sql`select c.table_name as table, c.column_name as column, c.udt_name = 'xid8' as xid8
          from information_schema.columns c join information_schema.tables t using (table_schema, table_name)
          where c.table_schema = current_schema() and t.table_type = 'BASE TABLE' order by 1, 2`,
    );
    const tables = new Map<string, string[]>();
    for (const c of columns) {
      const xid8s = tables.get(c.table) ?? [];
      if (c.xid8) xid8s.push(c.column);
      tables.set(c.table, xid8s);
    }
    const rows: Record<string, string[]> = {};
    for (const [table, xid8s] of tables) {
      const ranks = xid8s.map((c) => sql`${c}::text, dense_rank() over (order by t.${sql.identifier(c)})`);
      const ranked = ranks.length > 0 ? sql` || jsonb_build_object(${sql.join(ranks, sql`, `)})` : sql``;
      const found = await rowsOf<{ row: string }>(tx, sql`select (to_jsonb(t)${ranked})::text as row from ${sql.identifier(table)} t`);
      rows[table] = found.map((r) => r.row).sort();
    }
    return rows;
  });
}
