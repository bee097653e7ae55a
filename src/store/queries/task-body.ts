import { sql } from 'drizzle-orm';
import type { Db } from '../connect.ts';
import { rowsOf } from '../rows.ts';

/** The stored body's size without reading its bytes out; null bytes: purged by retention (or no such task). */
export async function taskBodySize(db: Db, taskId: string): Promise<number | null> {
  const [row] = await rowsOf<{ bytes: number | null }>(db, sql`select octet_length(body)::int as bytes from tasks where id = ${taskId}`);
  return row?.bytes ?? null;
}
