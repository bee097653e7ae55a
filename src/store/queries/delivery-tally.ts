import { sql } from 'drizzle-orm';
import type { Store } from '../connect.ts';
import { rowsOf } from '../rows.ts';
import { SLICE } from '../slices.ts';
import { horizon } from './cursor.ts';
import { Increments, oneAtATime, type Ledger } from './increments.ts';

const RECEIPTS: Ledger = { table: 'deliveries', key: 'decision', tiebreak: 'seq', tiebreakType: 'bigint' };

/**
 * Receipts by decision, counted by increments (increments.ts): a receipt is never deleted and its decision is
 * written once, when it is recorded. What a stats view reads in time that follows the new receipts, not all
 * receipts ever — on PGlite a whole count held the process for every view (a second at a million receipts).
 * The first read counts the history in slices of `slice` receipts.
 */
export function deliveryTally(store: Store, slice: number = SLICE[store.kind]): () => Promise<Record<string, number>> {
  const { db } = store;
  const decisions = new Increments();
  return oneAtATime(async () => {
    await decisions.settle(db, RECEIPTS, slice);
    const rows = await rowsOf<{ horizon: string; key: string | null; seen: number; settled: number }>(
      db,
      sql`with h as materialized (select ${horizon} as at)
          select (select at::text from h) as horizon, d.key, d.seen, d.settled
          from h left join lateral (
            select decision as key, count(*)::int as seen, (count(*) filter (where txid < h.at))::int as settled
            from deliveries where txid >= ${decisions.from}::xid8 group by decision
          ) d on true`,
    );
    const fresh = rows.flatMap(({ key, seen, settled }) => (key === null ? [] : [{ key, seen, settled }]));
    return Object.fromEntries(decisions.add(rows[0]!.horizon, fresh));
  });
}
