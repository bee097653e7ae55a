/**
 * Counts of an insert-only table's rows by a key that never changes, read in time that follows the inserts
 * rather than the history.
 *
 * Each row carries the ID of the transaction that inserted it (`txid`). Below the cursor horizon (the oldest
 * transaction still running here, see cursor.ts) that set of rows is closed: no transaction can add one there
 * any more. So the counts of the rows below the last horizon seen are kept, and each read counts only the rows
 * at or above it — those inserted since — saying which of them lie below the new horizon. The first read after
 * a start counts the table once.
 */
export class Increments {
  private below = '0';
  private readonly closed = new Map<string, number>();

  /** The txid the next read counts from (as text, for an `::xid8` parameter). */
  get from(): string {
    return this.below;
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
    this.below = horizon;
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
