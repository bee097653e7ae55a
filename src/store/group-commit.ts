import type { Store, WriteLane } from './connect.ts';
import { isRetryable, isStalledWrite, isUnreachable } from './retryable.ts';
import { onLane, type Stall } from './lane.ts';

interface Waiting<I, O> {
  input: I;
  resolve(output: O): void;
  reject(error: unknown): void;
  /** Set after its batch failed: it is tried once more on its own, so one bad item cannot fail its neighbours. */
  alone?: boolean;
  /** Batches it was in that failed on a dead connection or a lost race, and were tried again whole. */
  retries?: number;
}

/**
 * After a database restart a connection is dead until used once: a batch on the pool may meet several in a
 * row, each try taking another; a lane's one connection reconnects for the next try.
 */
const MAX_RETRIES = 3;

/**
 * PGlite runs each statement inside this process, holding the event loop until it is done, so nothing arrives
 * while a batch commits: a batch started the moment an item arrived, and the next the moment it finished, held
 * one item each. Starting it at the end of the event loop's turn instead lets every request read in that turn
 * join it. A PostgreSQL batch waits on the network, and items gather meanwhile without help.
 */
const GATHER_FIRST = { postgres: false, pglite: true } as const;

export interface GroupCommitOptions<I> {
  maxBatch: number;
  /** A batch stops growing before it would pass `maxBytes` as counted by `bytesOf` (it always holds one item). */
  maxBytes?: number;
  bytesOf?: (input: I) => number;
  /**
   * On a lane that can be abandoned: a batch with no answer after this long gives up its connection and is
   * tried again on a new one, and `onStall` is told. Without it one silent connection holds every batch behind.
   */
  stall?: Stall;
  /**
   * An item as it is written again after its batch failed on its connection: that batch may have committed
   * with only its answer lost, so what must be unique per write (a receipt's ID) is renewed here.
   */
  writtenAgain?: (input: I) => I;
}

/** What a group commit writes to: the store itself, or a lane of its own that it may abandon. */
export type WriteTarget = Pick<Store, 'kind' | 'db'> & { readonly abandon?: WriteLane['abandon'] };

/**
 * Group commit: items that arrive while a transaction is committing are written together in the next one,
 * so many share one durable commit. Nothing waits on a timer — an idle process writes each item at once —
 * and every caller is answered only after the commit that holds its item. `write` answers each item of a
 * batch in order, all in one transaction.
 *
 * One batch commits at a time. PGlite runs one transaction at a time anyway; on PostgreSQL a second batch in
 * flight split the same items into twice the commits for no more throughput: ingest at 32 and at 8 clients
 * kept its rate with one (1,505/1,399 and 1,102/918 accepted/s against 1,363/1,546 and 1,028/912, alternating)
 * with a lower p99 (35–37 ms against 42 at 32 clients) and a fifth less of PostgreSQL's CPU, and on a faster
 * day gained rate too (3,178/3,110 against 2,799/2,813 at 32 clients); draining a forwarding backlog, the
 * finishes cost PostgreSQL 0.19–0.25 ms per task against 0.27–0.29.
 */
export class GroupCommit<I, O> {
  private readonly queue: Waiting<I, O>[] = [];
  private committing = false;
  private readonly gatherFirst: boolean;
  private gathering = false;

  constructor(
    private readonly target: WriteTarget,
    private readonly write: (db: Store['db'], batch: readonly I[]) => Promise<O[]>,
    private readonly options: GroupCommitOptions<I>,
  ) {
    this.gatherFirst = GATHER_FIRST[target.kind];
  }

  record(input: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    if (!this.gatherFirst) {
      this.start();
    } else if (!this.gathering) {
      this.gathering = true;
      setImmediate(() => {
        this.gathering = false;
        this.start();
      });
    }
  }

  private start(): void {
    if (this.committing || this.queue.length === 0) return;
    this.committing = true;
    this.commit(this.take()).finally(() => {
      this.committing = false;
      this.pump();
    });
  }

  private take(): Waiting<I, O>[] {
    if (this.queue[0]!.alone) return [this.queue.shift()!];
    const { maxBatch, maxBytes = Infinity, bytesOf } = this.options;
    const batch: Waiting<I, O>[] = [];
    let bytes = 0;
    while (batch.length < maxBatch && this.queue.length > 0 && !this.queue[0]!.alone) {
      const next = this.queue[0]!;
      const size = bytesOf?.(next.input) ?? 0;
      if (batch.length > 0 && bytes + size > maxBytes) break;
      bytes += size;
      batch.push(this.queue.shift()!);
    }
    return batch;
  }

  private async commit(batch: Waiting<I, O>[]): Promise<void> {
    try {
      // A stalled batch that did commit, its answer lost, is written again as `writtenAgain` makes it.
      const written = await onLane(this.target, this.options.stall, this.write(this.target.db, batch.map((waiting) => waiting.input)));
      batch.forEach((waiting, i) => waiting.resolve(written[i]!));
    } catch (error) {
      const retries = Math.max(...batch.map((waiting) => waiting.retries ?? 0)) + 1;
      // A stall says nothing about the batch's items, only about the connection, which was given up: the batch
      // goes again whole, however often (each try waits `stall.ms`), never split into one write per item.
      if (isStalledWrite(error) || (isRetryable(error) && retries <= MAX_RETRIES)) {
        const again = this.options.writtenAgain ?? ((input: I) => input);
        this.queue.unshift(...batch.map((waiting) => ({ ...waiting, input: again(waiting.input), retries })));
        return;
      }
      // Tried alone, each item of a batch that could not reach the database at all would wait for its own try behind
      // the driver's backoff: its deadline passed in the queue. No item is at fault; the whole batch fails now.
      if (batch.length === 1 || isUnreachable(error)) {
        for (const waiting of batch) waiting.reject(error);
        return;
      }
      this.queue.unshift(...batch.map((waiting) => ({ ...waiting, alone: true })));
    }
  }
}
