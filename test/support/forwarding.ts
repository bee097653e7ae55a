import { asc, eq } from 'drizzle-orm';
import type { Db } from '../../src/store/connect.ts';
import { attempts, tasks } from '../../src/store/schema.ts';
import { LEDGER_COLUMNS } from '../../src/store/task-view.ts';

/** Waits for `check` to return a value (not undefined/false), polling; fails with the last value seen. */
export async function waitFor<T>(check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 10_000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    last = await check();
    if (last !== undefined && last !== false) return last as T;
    if (performance.now() > deadline) throw new Error(`waitFor: condition not met within ${timeoutMs} ms (last: ${JSON.stringify(last)})`);
    await new Promise((resolve) => setTimeout(resolve, 15));
  }
}

export { rowsOf as rows } from '../../src/store/rows.ts';

export type TaskRow = typeof tasks.$inferSelect;
export type LedgerRow = Omit<typeof attempts.$inferSelect, 'txid'>;

export async function task(db: Db, id: string): Promise<TaskRow> {
  const [row] = await db.select().from(tasks).where(eq(tasks.id, id));
  if (!row) throw new Error(`no task ${id}`);
  return row;
}

/** Waits until the task is in one of `states` (a settled state, usually) and returns it. */
export function taskIn(db: Db, id: string, ...states: string[]): Promise<TaskRow> {
  return waitFor(async () => {
    const row = await task(db, id);
    return states.includes(row.state) ? row : undefined;
  });
}

/** The run ledger of a task, in order. */
export function ledger(db: Db, taskId: string): Promise<LedgerRow[]> {
  return db.select(LEDGER_COLUMNS).from(attempts).where(eq(attempts.taskId, taskId)).orderBy(asc(attempts.id));
}
