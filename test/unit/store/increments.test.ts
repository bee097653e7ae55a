import { describe, expect, it } from 'vitest';
import { Increments } from '../../../src/store/queries/increments.ts';

/** Rows of an insert-only table by the transaction that inserted them, and what one read of it sees. */
const rows = [
  ...Array.from({ length: 10 }, (_, i) => ({ txid: 80 + i, key: 'accepted' })),
  { txid: 95, key: 'duplicate_delivery' },
  { txid: 120, key: 'accepted' },
];
function read(tally: Increments, horizon: number, visible = rows) {
  const from = BigInt(tally.from);
  const counts = new Map<string, { key: string; seen: number; settled: number }>();
  for (const row of visible.filter((r) => BigInt(r.txid) >= from)) {
    const c = counts.get(row.key) ?? { key: row.key, seen: 0, settled: 0 };
    c.seen += 1;
    if (row.txid < horizon) c.settled += 1;
    counts.set(row.key, c);
  }
  return Object.fromEntries(tally.add(String(horizon), [...counts.values()]));
}

describe('Increments', () => {
  it('counts every row once when the horizon steps back (a transaction of another database counted late)', () => {
    const tally = new Increments();
    expect(read(tally, 100)).toEqual({ accepted: 11, duplicate_delivery: 1 });
    // The next read's horizon is lower than the last: nothing below the last one may be counted again.
    expect(read(tally, 90)).toEqual({ accepted: 11, duplicate_delivery: 1 });
    expect(tally.from).toBe('100');
    expect(read(tally, 130)).toEqual({ accepted: 11, duplicate_delivery: 1 });
    expect(read(tally, 130)).toEqual({ accepted: 11, duplicate_delivery: 1 });
  });

  it('a row above the horizon is counted in every read until it is below one, then kept', () => {
    const tally = new Increments();
    expect(read(tally, 100, rows.slice(0, 11))).toEqual({ accepted: 10, duplicate_delivery: 1 });
    expect(read(tally, 110)).toEqual({ accepted: 11, duplicate_delivery: 1 });
    expect(read(tally, 125)).toEqual({ accepted: 11, duplicate_delivery: 1 });
    expect(tally.from).toBe('125');
  });
});
