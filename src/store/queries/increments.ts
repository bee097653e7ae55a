import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../connect.ts';
import { rowsOf } from '../rows.ts';
import { nextTurn } from '../slices.ts';
import { horizon } from './cursor.ts';

/**
 * A table counted by increments: what its rows are counted by, and the column that orders the rows of one
 * transaction, indexed after `txid`. Names, not input: they are written into the statement.
 */
export interface Ledger {
  table: string;
  key: string;
  tiebreak: string;
  tiebreakType: 'bigint' | 'text';
}

interface SliceRow {
  key: string;
  n: number;
  lastTxid: string;
  lastTiebreak: string;
}

/**
 * Counts of an insert-only table's rows by a key that never changes, read in time that follows the inserts
 * rather than the history.
 *
 * Each row carries the ID of the transaction that inserted it (`txid`). Below the cursor horizon (the oldest
 * transaction still running here, see cursor.ts) that set of rows is closed: no transaction can add one there
 * any more. So the counts of the rows below the last horizon seen are kept, and each read counts only the rows
 * at or above it — those inserted since — saying which of them lie below the new horizon. The first read after
 * a start counts the table once (`settle`).
 */
export class Increments {
  private below = '0';
  private readonly closed = new Map<string, number>();

  /** The txid the next read counts from (as text, for an `::xid8` parameter). */
  get from(): string {
    return this.below;
  }

  /**
   * Before the first read, counts the rows below the horizon in slices of `slice` rows in the order of the
   * ledger's (txid, tiebreak) index, the process serving others between them: on PGlite the first read of
   * the whole table held it for 0.3 s a million receipts. The rows below a horizon are closed, so a position
   * in that order partitions them: every row is counted once, whatever is inserted meanwhile (above it).
   * Nothing is kept until the last slice is in, so a failure leaves the next read to start over.
   */
  async settle(db: Db, ledger: Ledger, slice: number): Promise<void> {
    if (this.below !== '0' || slice === Infinity) return;
    const [start] = await rowsOf<{ at: string }>(db, sql`select (${horizon})::text as at`);
    const at = start!.at;
    const counts = new Map<string, number>();
    const { table, key, tiebreak, tiebreakType } = ledger;
    let after: { txid: string; tiebreak: string } | null = null;
    for (;;) {
      const past: SQL = after
        ? sql`and (txid, ${sql.raw(tiebreak)}) > (${after.txid}::xid8, ${after.tiebreak}::${sql.raw(tiebreakType)})`
        : sql``;
      const rows: SliceRow[] = await rowsOf<SliceRow>(
        db,
        sql`with s as materialized (
              select txid, ${sql.raw(tiebreak)} as tiebreak, ${sql.raw(key)} as key from ${sql.raw(table)}
              where txid < ${at}::xid8 ${past} order by txid, ${sql.raw(tiebreak)} limit ${slice}),
            last as (select txid::text as txid, tiebreak::text as tiebreak from s order by s.txid desc, s.tiebreak desc limit 1)
            select s.key, count(*)::int as n, last.txid as "lastTxid", last.tiebreak as "lastTiebreak"
            from s, last group by s.key, last.txid, last.tiebreak`,
      );
      let read = 0;
      for (const row of rows) {
        counts.set(row.key, (counts.get(row.key) ?? 0) + row.n);
        read += row.n;
      }
      if (read < slice) break;
      after = { txid: rows[0]!.lastTxid, tiebreak: rows[0]!.lastTiebreak };
      await nextTurn();
    }
    this.add(at, [...counts].map(([k, n]) => ({ key: k, seen: n, settled: n })));
  }

  /**
   * Folds in one read: `seen` rows of each key at or above `from`, `settled` of them below `horizon`, all read
   * in one snapshot with that horizon. Answers the count of every key.
   */
  add(horizon: string, rows: readonly { key: string; seen: number; settled: number }[]): Map<string, number> {
    const totals = new Map(this.closed);
    for (const { key, seen, settled } of rows) {
      totals.set(key, (totals.get(key) ?? 0) + seen);
      this.closed.set(key, (this.closed.get(key) ?? 0) + settled);
    }
    // The horizon can step back: a transaction of another database that ended between the snapshot and the
    // read of pg_stat_activity counts after all (cursor.ts errs late). The rows below the higher one are
    // closed already; counting from the lower one would add them again, in every read after.
    if (BigInt(horizon) > BigInt(this.below)) this.below = horizon;
    return totals;
  }
}

/**
 * One read at a time: a caller arriving while a read is in flight shares it. Two reads at once would both
 * add the same increment.
 */
export function oneAtATime<T>(read: () => Promise<T>): () => Promise<T> {
  let reading: Promise<T> | null = null;
  return () => (reading ??= read().finally(() => (reading = null)));
}
