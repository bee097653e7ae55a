import { describe, expect, it } from 'vitest';
import type { Store } from '../../../src/store/connect.ts';
import { GroupCommit, type WriteTarget } from '../../../src/store/group-commit.ts';

/** A store of the given kind whose database is never touched: the write below only records the batches. */
function storeOf(kind: Store['kind']): WriteTarget {
  return { kind, db: {} as Store['db'] };
}

/** A lane whose clients are numbered: each abandon moves it to the next. */
function numberedLanes() {
  let lane = 0;
  const target: WriteTarget = {
    kind: 'postgres',
    get db() {
      return { lane } as unknown as Store['db'];
    },
    abandon: () => lane++,
  };
  return { target, laneOf: (db: Store['db']) => (db as unknown as { lane: number }).lane };
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

  it('abandons a connection that stopped answering and writes the batch again on the next one', async () => {
    const lanes: Store['db'][] = [{} as Store['db']];
    const target: WriteTarget = {
      kind: 'postgres',
      get db() {
        return lanes.at(-1)!;
      },
      abandon: () => lanes.push({} as Store['db']),
    };
    const tries: Array<[lane: number, batch: number[]]> = [];
    let stalls = 0;
    const writer = new GroupCommit<number, number>(
      target,
      (db, batch) => {
        tries.push([lanes.indexOf(db), [...batch]]);
        // The first connection went silent: its statement never answers.
        return lanes.indexOf(db) === 0 ? new Promise<never>(() => {}) : Promise.resolve(batch.map((n) => n * 2));
      },
      { maxBatch: 128, stall: { ms: 30, onStall: () => stalls++ } },
    );
    expect(await Promise.all([writer.record(1), writer.record(2)])).toEqual([2, 4]);
    expect(stalls).toBe(1);
    // The abandoned batch goes first on the new connection, with what arrived meanwhile.
    expect(tries).toEqual([
      [0, [1]],
      [1, [1, 2]],
    ]);
  });

  it('a batch given up on its connection goes again whole, however often, renewed by writtenAgain', async () => {
    const { target, laneOf } = numberedLanes();
    const tries: number[][] = [];
    const writer = new GroupCommit<number, number>(
      target,
      (db, batch) => {
        tries.push([...batch]);
        // Five connections in a row go silent; the sixth answers.
        return laneOf(db) < 5 ? new Promise<never>(() => {}) : Promise.resolve([...batch]);
      },
      { maxBatch: 128, stall: { ms: 10, onStall: () => {} }, writtenAgain: (n) => n + 10 },
    );
    const answers = Promise.all([writer.record(1), writer.record(2), writer.record(3)]);
    expect(await answers).toEqual([51, 42, 43]);
    expect(tries).toEqual([[1], [11, 2, 3], [21, 12, 13], [31, 22, 23], [41, 32, 33], [51, 42, 43]]);
  });

  it('fails a whole batch at once when the database cannot be reached: no item is tried alone', async () => {
    const tries: number[][] = [];
    let down = true;
    const writer = new GroupCommit<number, number>(
      storeOf('postgres'),
      async (_db, batch) => {
        tries.push([...batch]);
        if (down) throw new Error('Failed query', { cause: Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432'), { code: 'ECONNREFUSED' }) });
        return [...batch];
      },
      { maxBatch: 128 },
    );
    const first = writer.record(0);
    const rest = [1, 2, 3].map((n) => writer.record(n));
    const outcomes = await Promise.allSettled([first, ...rest]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
    // Tried alone, each item would wait for its own try behind the driver's backoff, up to a second apiece, and a
    // sender's deadline passed before its turn: during a failover ingest answered 503 at the deadline, 4 s late.
    expect(tries).toEqual([[0], [1, 2, 3]]);
    down = false;
    expect(await writer.record(4)).toBe(4);
  });

  it('after a connection failure, the next try goes on a new client', async () => {
    const { target, laneOf } = numberedLanes();
    const lanes: number[] = [];
    const writer = new GroupCommit<number, number>(
      target,
      async (db, batch) => {
        lanes.push(laneOf(db));
        if (lanes.length === 1) throw Object.assign(new Error('write CONNECTION_CLOSED'), { code: 'CONNECTION_CLOSED' });
        return [...batch];
      },
      { maxBatch: 128 },
    );
    expect(await writer.record(5)).toBe(5);
    expect(lanes).toEqual([0, 1]);
  });

  it('has nothing to abandon in this process (PGlite): a slow write is waited for', async () => {
    let stalls = 0;
    const writer = new GroupCommit<number, number>(
      storeOf('pglite'),
      async (_db, batch) => {
        await new Promise((resolve) => setTimeout(resolve, 60));
        return [...batch];
      },
      { maxBatch: 128, stall: { ms: 10, onStall: () => stalls++ } },
    );
    expect(await writer.record(7)).toBe(7);
    expect(stalls).toBe(0);
  });
});
