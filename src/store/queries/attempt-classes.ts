import { sql } from 'drizzle-orm';
import type { Db, Store } from '../connect.ts';
import { rowsOf } from '../rows.ts';
import { nextTurn, SLICE } from '../slices.ts';
import { ATTEMPTS_IN_FLIGHT } from './attempt-series.ts';

/**
 * Attempts by outcome class (`open`: still in flight), counted slice by slice over the primary key (a count
 * of every attempt at once held PGlite's process 0.45 s a million). Each attempt is counted once, with its
 * class when its slice was read: ids partition the table, and the last slice takes every id above it, those
 * inserted meanwhile included. An attempt in flight has no row yet (migration 0027): its task in progress, under
 * the claim it notes, counts it.
 *
 * Not a tally by increments as receipts and tasks are: a row changes class again when a worker whose lease was
 * reclaimed finishes late (the ledger keeps that result, marked superseded).
 */
export async function attemptClasses(store: Store, slice: number = SLICE[store.kind]): Promise<Record<string, number>> {
  const { db } = store;
  const [top] = await rowsOf<{ last: number }>(db, sql`select coalesce(max(id), 0)::float8 as last from attempts`);
  const counts: Record<string, number> = {};
  for (let from = 0; ; from += slice) {
    const lastSlice = from + slice >= top!.last;
    const rows = await rowsOf<{ key: string; n: number }>(
      db,
      sql`select coalesce(class, 'open') as key, count(*)::int as n from attempts
          where id > ${from} ${lastSlice ? sql`` : sql`and id <= ${from + slice}`} group by 1`,
    );
    for (const { key, n } of rows) counts[key] = (counts[key] ?? 0) + n;
    if (lastSlice) return withInFlight(db, counts);
    await nextTurn();
  }
}

/** `counts` and the attempts in flight, as `open`: the tasks in progress (few: one a worker's slot). */
async function withInFlight(db: Db, counts: Record<string, number>): Promise<Record<string, number>> {
  const [row] = await rowsOf<{ n: number }>(db, sql`select count(*)::int as n from ${ATTEMPTS_IN_FLIGHT.table}`);
  if (row!.n > 0) counts.open = (counts.open ?? 0) + row!.n;
  return counts;
}
