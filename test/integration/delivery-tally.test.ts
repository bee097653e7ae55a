import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordDeliveries } from '../../src/store/atomic/record.ts';
import { deliveryTally } from '../../src/store/queries/delivery-tally.ts';
import { statsReader } from '../../src/store/queries/stats.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { engine, freshStore, holdTransaction, type TestStore } from '../support/engine.ts';
import { writeBeforeStatement } from '../support/interleave.ts';
import { shopReceipt } from '../support/receipts.ts';

let t: TestStore;
beforeAll(async () => {
  t = await freshStore();
});
afterAll(async () => t?.close());

/** Receipts whose decisions are each kind once per round: accepted, and a duplicate delivery, event and task. */
async function everyDecision(round: string): Promise<void> {
  await recordDeliveries(t.store.db, [shopReceipt(`${round}-d1`, `${round}-e1`)]);
  await recordDeliveries(t.store.db, [
    shopReceipt(`${round}-d1`, `${round}-e1`),
    shopReceipt(`${round}-d2`, `${round}-e1`),
    shopReceipt(`${round}-d3`, `${round}-e3`, `${round}-e1`),
  ]);
}

async function counted(): Promise<{ decisions: Record<string, number>; events: number; deliveries: number }> {
  const rows = await rowsOf<{ decision: string; n: number }>(t.store.db, sql`select decision, count(*)::int as n from deliveries group by decision`);
  const [keys] = await rowsOf<{ n: number }>(t.store.db, sql`select count(*)::int as n from event_keys`);
  const decisions = Object.fromEntries(rows.map((row) => [row.decision, row.n]));
  return { decisions, events: keys!.n, deliveries: rows.reduce((n, row) => n + row.n, 0) };
}

describe('receipt tally', () => {
  it('counts receipts by decision and events as whole counts do, read after read', async () => {
    const stats = statsReader(t.store);
    expect(await stats()).toMatchObject({ events: 0, deliveries: 0, decisions: {} });
    await everyDecision('a');
    const first = await stats();
    expect(first.decisions).toEqual({ accepted: 1, duplicate_delivery: 1, duplicate_event: 1, duplicate_task: 1 });
    expect({ decisions: first.decisions, events: first.events, deliveries: first.deliveries }).toEqual(await counted());
    await everyDecision('b');
    await everyDecision('c');
    const later = await stats();
    expect({ decisions: later.decisions, events: later.events, deliveries: later.deliveries }).toEqual(await counted());
    expect(later.events).toBe(6);
    // Reads at once share one: both would otherwise add the same new receipts.
    await everyDecision('d');
    const tally = deliveryTally(t.store);
    const together = await Promise.all([tally(), tally(), tally()]);
    for (const read of together) expect(read).toEqual((await counted()).decisions);
  });

  it('reads only the receipts recorded since its last read, not the history', async () => {
    const tally = deliveryTally(t.store);
    await everyDecision('e');
    const before = await tally();
    // A decision is written once; one changed behind the tally's back shows whether it reads its past again.
    await t.store.db.execute(sql`update deliveries set decision = 'duplicate_event' where delivery_id = 'e-d1' and decision = 'accepted'`);
    await everyDecision('f');
    const after = await tally();
    expect(after).toEqual(Object.fromEntries(Object.entries(before).map(([key, n]) => [key, n + 1])));
    const truth = (await counted()).decisions;
    expect(truth.accepted).toBe(after.accepted! - 1);
    // Another process starting now counts from nothing and agrees.
    expect(await deliveryTally(t.store)()).toEqual(truth);
  });

  it('counts the history in slices at its first read, each receipt once, those recorded meanwhile too', async () => {
    await everyDecision('s1');
    await everyDecision('s2');
    const truth = (await counted()).decisions;
    for (const slice of [1, 3, 4, 7, 1_000, Infinity]) expect(await deliveryTally(t.store, slice)()).toEqual(truth);
    // Statement 1 takes the horizon, 2 and on are the slices: receipts recorded before the first slice and
    // between two land above the horizon and are counted by the read that follows the slices.
    let round = 0;
    for (const n of [2, 3]) {
      const tally = deliveryTally(writeBeforeStatement(t.store, n, () => everyDecision(`s-late-${round++}`)), 3);
      expect(await tally()).toEqual((await counted()).decisions);
      await everyDecision(`s-after-${n}`);
      expect(await tally()).toEqual((await counted()).decisions);
    }
  });

  if (engine() === 'postgres') it('counts a receipt whose transaction began before a read and committed after it, once', async () => {
    const tally = deliveryTally(t.store);
    await tally();
    const late = await holdTransaction(
      t.database.url!,
      (tx) => tx`insert into deliveries (id, source, delivery_id, event_id, decision, headers, body_sha256, body_bytes)
                 values ('r-late', 'shop', 'late', 'late', 'duplicate_delivery', '{}', 'x', 0)`,
    );
    try {
      await everyDecision('g');
      const whileOpen = await tally();
      expect(whileOpen).toEqual((await counted()).decisions);
      await late.commit();
      const after = await tally();
      expect(after.duplicate_delivery).toBe(whileOpen.duplicate_delivery! + 1);
      expect(after).toEqual((await counted()).decisions);
      expect(await tally()).toEqual(after);
    } finally {
      await late.commit();
      await late.end();
    }
  });
});
