import type { Query, Table } from './catalog.ts';
import { ident } from './sql-text.ts';

/** A table's row count and a checksum of its rows. */
export interface TableSum {
  rows: number;
  sum: string;
}

/**
 * The count of `table`'s rows and the sum of a 64-bit hash of each row's text, every value written under the
 * same settings on both sides (SESSION). A sum, so the order rows are read in does not matter; a hash of each
 * whole row, so a value changed, lost or moved to another row changes it. `value` is what each column holds as
 * the target should have it: the source maps its transaction IDs (txids.ts).
 */
export async function tableSum(query: Query, table: Table, value: (column: Table['columns'][number]) => string): Promise<TableSum> {
  const row = `row(${table.columns.map(value).join(', ')})::text`;
  const [result] = await query<{ rows: string; sum: string }>(
    `select count(*)::text as rows,
            coalesce(sum(('x' || left(encode(sha256(convert_to(${row}, 'UTF8')), 'hex'), 16))::bit(64)::bigint), 0)::text as sum
     from ${ident(table.name)} t`,
  );
  return { rows: Number(result!.rows), sum: result!.sum };
}
