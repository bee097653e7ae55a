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
