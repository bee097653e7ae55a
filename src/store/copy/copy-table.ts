import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { TransactionSql } from 'postgres';
import type { Table } from './catalog.ts';
import type { EmbeddedSource } from './source.ts';
import { ident, literal } from './sql-text.ts';
import { sourceValue } from './txids.ts';

/**
 * A batch's bounds. By rows, and by bytes for tables whose rows hold bodies (up to 1 MiB each): a batch is held
 * whole in memory on its way, so 5,000 large bodies must not make one.
 */
export const BATCH = { rows: 5_000, bytes: 8 * 1024 * 1024 };

export type BatchBounds = typeof BATCH;

/** Where copying a table stands: about to start, a batch in, or done. */
export type TableProgress =
  | { kind: 'table'; table: string; total: number }
  | { kind: 'rows'; table: string; copied: number; total: number }
  | { kind: 'copied'; table: string; rows: number; ms: number };

/**
 * Copies every table, in the order given, from the source into the target's transaction. Answers each table's
 * rows and how long it took.
 *
 * The embedded server has no statistics to plan by: standalone PostgreSQL runs no autovacuum, and so no automatic
 * ANALYZE (and analyzing the copy first took 4.7 s on 100,000 deliveries). Without them the planner took a batch's
 * `order by key limit n` for a handful of rows, and read the whole table and sorted it for every batch (tasks: 236
 * ms a batch, where the primary key's index answered in 29). So while the tables are paged, plans that do not read
 * in key order are ruled out. Each table's rows are counted first, for the progress, without that rule.
 */
export async function copyTables(
  source: EmbeddedSource,
  target: TransactionSql,
  tables: readonly Table[],
  say: (progress: TableProgress) => void,
  batch: BatchBounds = BATCH,
): Promise<{ name: string; rows: number; ms: number }[]> {
  const totals: number[] = [];
  for (const table of tables) {
    const [count] = await source.query<{ n: string }>(`select count(*)::text as n from ${ident(table.name)}`);
    totals.push(Number(count!.n));
  }
  const copied: { name: string; rows: number; ms: number }[] = [];
  await source.query('set enable_seqscan = off');
  await source.query('set enable_sort = off');
  try {
    for (const [i, table] of tables.entries()) {
      const total = totals[i]!;
      say({ kind: 'table', table: table.name, total });
      const began = performance.now();
      const rows = await copyTable(source, target, table, batch, (n) => say({ kind: 'rows', table: table.name, copied: n, total }));
      const ms = performance.now() - began;
      say({ kind: 'copied', table: table.name, rows, ms });
      copied.push({ name: table.name, rows, ms });
    }
  } finally {
    await source.query('reset enable_seqscan');
    await source.query('reset enable_sort');
  }
  return copied;
}

/**
 * Copies `table` from the source into the target's transaction in batches, each read in primary-key order from
 * where the last ended (keyset pagination: every batch an index range scan, however deep into the table) and
 * carried by COPY in PostgreSQL's text format, which writes each value as the text that reads back exactly.
 * Answers how many rows it copied; `onBatch` hears the count so far after each batch.
 */
async function copyTable(
  source: EmbeddedSource,
  target: TransactionSql,
  table: Table,
  batch: BatchBounds,
  onBatch: (copied: number) => void,
): Promise<number> {
  const key = table.primaryKey.map((c) => ident(c));
  const keyTypes = table.primaryKey.map((name) => table.columns.find((c) => c.name === name)!.type);
  const position = (values: readonly string[]) => `(${values.map((v, i) => `${literal(v)}::${keyTypes[i]}`).join(', ')})`;
  // Stored sizes: a body kept out of line counts its compressed size, read without fetching it.
  const size = table.columns.map((c) => `coalesce(pg_column_size(t.${ident(c.name)}), 0)`).join(' + ');
  const values = table.columns.map(sourceValue).join(', ');
  const copyIn = `copy ${ident(table.name)} (${table.columns.map((c) => ident(c.name)).join(', ')}) from stdin`;
  let after: string[] | null = null;
  let copied = 0;
  for (;;) {
    const past: string = after ? `(${key.map((k) => `t.${k}`).join(', ')}) > ${position(after)}` : 'true';
    const [end] = await source.query<Record<string, string>>(
      `select * from (
         select ${key.map((_, i) => `k${i}`).join(', ')}, row_number() over w as n, sum(size) over w as bytes
         from (select ${key.map((k, i) => `t.${k} as o${i}, t.${k}::text as k${i}`).join(', ')}, ${size} as size
               from ${ident(table.name)} t where ${past} order by ${key.map((k) => `t.${k}`).join(', ')} limit ${batch.rows}) b
         window w as (order by ${key.map((_, i) => `o${i}`).join(', ')})) s
       where n = 1 or bytes <= ${batch.bytes} order by n desc limit 1`,
    );
    if (!end) return copied;
    const upto: string[] = key.map((_, i) => end[`k${i}`]!);
    const data = await source.copyOut(
      `select ${values} from ${ident(table.name)} t where ${past} and (${key.map((k) => `t.${k}`).join(', ')}) <= ${position(upto)}
       order by ${key.map((k) => `t.${k}`).join(', ')}`,
    );
    await pipeline(Readable.from([data]), await target.unsafe(copyIn).writable());
    copied += Number(end.n);
    onBatch(copied);
    after = upto;
  }
}
