import { describe, expect, it } from 'vitest';
import type { Store } from '../../../src/store/connect.ts';
import { GroupCommit } from '../../../src/store/group-commit.ts';

/** A store of the given kind whose database is never touched: the write below only records the batches. */
function storeOf(kind: Store['kind']): Store {
  return { kind, db: {} as Store['db'], diskSyncs: null, listen: async () => async () => {}, close: async () => {} };
}

async function batchesFor(kind: Store['kind'], items: number): Promise<number[]> {
  const sizes: number[] = [];
  const writer = new GroupCommit<number, number>(
    storeOf(kind),
    async (_db, batch) => {
      sizes.push(batch.length);
      // An engine in this process answers without yielding to the event loop between batches.
      return batch.map((n) => n * 2);
    },
    { maxBatch: 128 },
  );
  // Every item arrives in the same turn of the event loop, as requests read together do.
  const answers = await Promise.all(Array.from({ length: items }, (_, i) => writer.record(i)));
  expect(answers).toEqual(Array.from({ length: items }, (_, i) => i * 2));
  return sizes;
}

describe('group commit', () => {
  it('on PGlite gathers what arrives in one turn of the event loop into one batch', async () => {
    expect(await batchesFor('pglite', 20)).toEqual([20]);
  });

  it('on PostgreSQL starts the first batch at once, without waiting for the turn to end', async () => {
    const sizes = await batchesFor('postgres', 20);
    expect(sizes[0]).toBe(1);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(20);
  });

  it('commits one batch at a time: what arrives meanwhile waits for it and goes in the next', async () => {
    expect(await batchesFor('postgres', 20)).toEqual([1, 19]);
  });
});
