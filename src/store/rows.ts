import type { SQL } from 'drizzle-orm';
import type { Db } from './connect.ts';

/**
 * The rows of a raw statement, on a database or inside one of its transactions: postgres.js answers an
 * array, PGlite an object holding one.
 */
export async function rowsOf<T>(db: Pick<Db, 'execute'>, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as unknown as T[] | { rows: T[] };
  return Array.isArray(result) ? result : result.rows;
}

/**
 * A batch travels as one JSON parameter unpacked by `json_to_recordset`, not as a multi-row VALUES list: one
 * parameter instead of one per value keeps the statement's build and encode cost flat as batches grow
 * (measured: the query builder's per-value work was the gateway's largest cost under load).
 */
export function batchJson(rows: readonly object[]): string {
  return JSON.stringify(rows);
}
