/**
 * What `copy-data` copies, read from a database's own catalog rather than listed by hand: a table a later
 * migration adds is copied without anyone remembering to add it here. The same statements run on the embedded
 * source and on the PostgreSQL target, so their answers can be compared.
 */

/** A statement with parameters, on either engine; its rows as objects. */
export type Query = <T extends object = Record<string, unknown>>(text: string, params?: unknown[]) => Promise<T[]>;

export interface Column {
  name: string;
  /** As `format_type` writes it, for casts and for comparing the two catalogs. */
  type: string;
  /** A transaction ID (`txid`), which means nothing on another server: copy-data maps it (txids.ts). */
  xid8: boolean;
}

export interface Table {
  name: string;
  /** In the table's order, leaving out generated columns, which the target computes itself. */
  columns: Column[];
  /** Rows are read in batches in this order: keyset pagination needs a unique, ordered key. */
  primaryKey: string[];
  /** The tables its foreign keys point at, which must be filled first. */
  references: string[];
}

/** Tables of the schema oncehook migrates into: partitions are read and written through their parent. */
const TABLES = `
  select c.relname as table, a.attname as column, format_type(a.atttypid, a.atttypmod) as type,
         a.atttypid = 'xid8'::regtype as xid8
  from pg_class c
  join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
  where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
  order by c.relname, a.attnum`;

const PRIMARY_KEYS = `
  select c.relname as table, a.attname as column
  from pg_index i
  join pg_class c on c.oid = i.indrelid
  cross join lateral unnest(i.indkey) with ordinality as k(attnum, position)
  join pg_attribute a on a.attrelid = c.oid and a.attnum = k.attnum
  where i.indisprimary and c.relnamespace = current_schema()::regnamespace
  order by c.relname, k.position`;

const FOREIGN_KEYS = `
  select child.relname as table, parent.relname as references
  from pg_constraint f
  join pg_class child on child.oid = f.conrelid
  join pg_class parent on parent.oid = f.confrelid
  where f.contype = 'f' and f.connamespace = current_schema()::regnamespace`;

export async function readTables(query: Query): Promise<Table[]> {
  const [columns, keys, references] = await Promise.all([
    query<{ table: string; column: string; type: string; xid8: boolean }>(TABLES),
    query<{ table: string; column: string }>(PRIMARY_KEYS),
    query<{ table: string; references: string }>(FOREIGN_KEYS),
  ]);
  const tables = new Map<string, Table>();
  for (const row of columns) {
    let table = tables.get(row.table);
    if (!table) tables.set(row.table, (table = { name: row.table, columns: [], primaryKey: [], references: [] }));
    table.columns.push({ name: row.column, type: row.type, xid8: row.xid8 });
  }
  for (const key of keys) tables.get(key.table)?.primaryKey.push(key.column);
  for (const fk of references) {
    const table = tables.get(fk.table);
    if (table && fk.references !== fk.table) table.references.push(fk.references);
  }
  return [...tables.values()];
}

/** Tables in an order that fills every table a foreign key points at before the table that points. */
export function copyOrder(tables: readonly Table[]): Table[] {
  const byName = new Map(tables.map((t) => [t.name, t]));
  const ordered: Table[] = [];
  const placed = new Set<string>();
  const visiting = new Set<string>();
  const place = (table: Table) => {
    if (placed.has(table.name)) return;
    if (visiting.has(table.name)) throw new Error(`the foreign keys of ${table.name} form a cycle: no order fills them`);
    visiting.add(table.name);
    for (const parent of table.references) {
      const referenced = byName.get(parent);
      if (referenced) place(referenced);
    }
    visiting.delete(table.name);
    placed.add(table.name);
    ordered.push(table);
  };
  for (const table of [...tables].sort((a, b) => a.name.localeCompare(b.name))) place(table);
  return ordered;
}

/** A sequence and the value it last gave out (null: none yet). */
export interface SequenceState {
  name: string;
  lastValue: string | null;
}

export async function readSequences(query: Query): Promise<SequenceState[]> {
  return query<SequenceState>(
    `select sequencename as name, last_value::text as "lastValue" from pg_sequences
     where schemaname = current_schema() order by sequencename`,
  );
}

/** How the two catalogs differ, one line per difference; none when copy-data can copy table for table. */
export function catalogDifferences(source: readonly Table[], target: readonly Table[]): string[] {
  const signature = (t: Table) => t.columns.map((c) => `${c.name} ${c.type}`).join(', ');
  const targets = new Map(target.map((t) => [t.name, t]));
  const differences: string[] = [];
  for (const table of source) {
    const there = targets.get(table.name);
    if (!there) differences.push(`${table.name} is in the data directory only`);
    else if (signature(there) !== signature(table)) {
      differences.push(`${table.name} has (${signature(table)}) in the data directory, (${signature(there)}) in the target`);
    }
    targets.delete(table.name);
  }
  for (const name of targets.keys()) differences.push(`${name} is in the target only`);
  for (const table of source) if (table.primaryKey.length === 0) differences.push(`${table.name} has no primary key to page by`);
  return differences;
}
