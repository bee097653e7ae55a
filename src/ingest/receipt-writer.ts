import type { Logger } from '../log.ts';
import { recordDeliveries, type ReceiptInput, type Recorded } from '../store/atomic/record.ts';
import type { Db, Store } from '../store/connect.ts';
import { GroupCommit } from '../store/group-commit.ts';
import { receiptId } from '../ids.ts';

/** Receipts written in one transaction at most; a batch also stops before 8 MiB of bodies. */
const RECEIPTS_PER_BATCH = 128;
const BATCH_BYTES = 8 * 1024 * 1024;

/** Where ingest records deliveries: a delivery is one receipt, or one per event of a batch, written together. */
export type ReceiptWriter = GroupCommit<ReceiptInput[], Recorded[]>;

/**
 * One a process, on a lane of its own: receipts arriving together share one transaction, whichever config's ingest
 * (the one a reload replaces, or its successor) answers them.
 */
export function receiptWriter(store: Store, logger: Logger, stallMs: number): ReceiptWriter {
  return new GroupCommit<ReceiptInput[], Recorded[]>(store.lane(), recordGroups, {
    maxBatch: RECEIPTS_PER_BATCH,
    maxBytes: BATCH_BYTES,
    bytesOf: (group) => group.reduce((n, receipt) => n + receipt.body.byteLength, 0),
    stall: {
      ms: stallMs,
      onStall: () => logger.warn(`no answer from PostgreSQL in ${stallMs} ms: abandoning ingest's connection and writing the batch again on a new one`),
    },
    writtenAgain: (group) => group.map((receipt) => ({ ...receipt, id: receiptId() })),
  });
}

async function recordGroups(db: Db, groups: readonly ReceiptInput[][]): Promise<Recorded[][]> {
  const recorded = await recordDeliveries(db, groups.flat());
  let at = 0;
  return groups.map((group) => recorded.slice(at, (at += group.length)));
}
