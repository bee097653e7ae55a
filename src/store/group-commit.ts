import { recordDeliveries, type ReceiptInput, type Recorded } from '../store/atomic.ts';
import type { Store } from '../store/connect.ts';
import { isRetryable } from '../store/retryable.ts';

interface Waiting {
  input: ReceiptInput;
  resolve(recorded: Recorded): void;
  reject(error: unknown): void;
  /** Set after its batch failed: it is tried once more on its own, so one bad receipt cannot fail its neighbours. */
  alone?: boolean;
  /** Batches it was in that failed on a dead connection or a lost race, and were tried again whole. */
  retries?: number;
}

/**
 * After a database restart every pooled connection is dead until used once, so a batch may meet several in a
 * row; each try takes another connection from the pool.
 */
const MAX_RETRIES = 3;

/** How many batches may be committing at once: PGlite runs one transaction at a time anyway. */
const PARALLEL = { postgres: 2, pglite: 1 } as const;
const MAX_BATCH = 128;
const MAX_BATCH_BYTES = 8 * 1024 * 1024;

/**
 * Group commit: deliveries that arrive while a transaction is committing are written together in the next
 * one, so many deliveries share one durable commit. Nothing waits on a timer — an idle gateway writes each
 * delivery at once — and every caller is answered only after the commit that holds its delivery.
 */
export class GroupCommit {
  private readonly queue: Waiting[] = [];
  private running = 0;
  private readonly parallel: number;

  constructor(private readonly store: Store) {
    this.parallel = PARALLEL[store.kind];
  }

  record(input: ReceiptInput): Promise<Recorded> {
    return new Promise((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.running < this.parallel && this.queue.length > 0) {
      const batch = this.take();
      this.running++;
      this.commit(batch).finally(() => {
        this.running--;
        this.pump();
      });
    }
  }

  private take(): Waiting[] {
    if (this.queue[0]!.alone) return [this.queue.shift()!];
    const batch: Waiting[] = [];
    let bytes = 0;
    while (batch.length < MAX_BATCH && this.queue.length > 0 && !this.queue[0]!.alone) {
      const next = this.queue[0]!;
      if (batch.length > 0 && bytes + next.input.body.byteLength > MAX_BATCH_BYTES) break;
      bytes += next.input.body.byteLength;
      batch.push(this.queue.shift()!);
    }
    return batch;
  }

  private async commit(batch: Waiting[]): Promise<void> {
    try {
      const recorded = await recordDeliveries(this.store.db, batch.map((waiting) => waiting.input));
      batch.forEach((waiting, i) => waiting.resolve(recorded[i]!));
    } catch (error) {
      const retries = Math.max(...batch.map((waiting) => waiting.retries ?? 0)) + 1;
      if (isRetryable(error) && retries <= MAX_RETRIES) {
        this.queue.unshift(...batch.map((waiting) => ({ ...waiting, retries })));
        return;
      }
      if (batch.length === 1) {
        batch[0]!.reject(error);
        return;
      }
      this.queue.unshift(...batch.map((waiting) => ({ ...waiting, alone: true })));
    }
  }
}
