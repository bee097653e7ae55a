import { sql } from 'drizzle-orm';
import type { Store } from '../connect.ts';
import { rowsOf } from '../rows.ts';
import { SLICE } from '../slices.ts';
import { ATTEMPTS_IN_FLIGHT, RECLAIMED_CLASS } from './attempt-series.ts';
import { horizon } from './cursor.ts';
import { Increments, oneAtATime, type Ledger } from './increments.ts';

/** `open`: a row from before migration 0027, which opened a row at the claim; none is written open since. */
const ATTEMPTS: Ledger = { table: 'attempts', key: `coalesce(class, 'open')`, tiebreak: 'id', tiebreakType: 'bigint' };

interface TallyRow {
  horizon: string;
  reclaimed: number;
  inFlight: number;
  key: string | null;
  seen: number;
  settled: number;
}

/**
 * Attempts by outcome class (`open`: still in flight), read in time that follows the attempts that ended since the
 * last read rather than all attempts ever: counted whole, 10 million held PostgreSQL 3.3 s a view.
 *
 * An attempt's row is written whole when it ends (migration 0027), and counted by increments (increments.ts) over
 * its `txid`; the first read counts the history in slices of `slice` rows. Only a reclaim's row changes class
 * afterwards, when the worker whose lease expired finishes late (finish.ts): a trigger then gives the row the
 * updating transaction's ID (migration 0028), so the increments meet it again, with its new class, as a new row.
 * What they counted of that class before is left out, and the class is counted whole instead, over its own index:
 * a reclaim is rare. An attempt in flight
 * has no row yet: its task in progress, under the claim it notes, counts it. Both in the increments' statement,
 * so every figure comes from one snapshot.
 */
export function attemptTally(store: Store, slice: number = SLICE[store.kind]): () => Promise<Record<string, number>> {
  const { db } = store;
  const classes = new Increments();
  return oneAtATime(async () => {
    await classes.settle(db, ATTEMPTS, slice);
    const rows = await rowsOf<TallyRow>(
      db,
      sql`with h as materialized (select ${horizon} as at)
          select (select at::text from h) as horizon,
            (select count(*)::int from attempts where class = ${RECLAIMED_CLASS}) as reclaimed,
            (select count(*)::int from ${ATTEMPTS_IN_FLIGHT.table}) as "inFlight",
            d.key, d.seen, d.settled
          from h left join lateral (
            select ${sql.raw(ATTEMPTS.key)} as key, count(*)::int as seen, (count(*) filter (where txid < h.at))::int as settled
            from attempts where txid >= ${classes.from}::xid8 group by 1
          ) d on true`,
    );
    const first = rows[0]!;
    const fresh = rows.flatMap(({ key, seen, settled }) => (key === null ? [] : [{ key, seen, settled }]));
    const totals = classes.add(first.horizon, fresh);
    totals.delete(RECLAIMED_CLASS);
    if (first.reclaimed > 0) totals.set(RECLAIMED_CLASS, first.reclaimed);
    if (first.inFlight > 0) totals.set('open', (totals.get('open') ?? 0) + first.inFlight);
    return Object.fromEntries(totals);
  });
}
