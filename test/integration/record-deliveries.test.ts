import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { receiptId, taskId } from '../../src/ids.ts';
import { bulkDecide } from '../../src/store/atomic/bulk.ts';
import { recordDeliveries, type ReceiptInput, type Recorded } from '../../src/store/atomic/record.ts';
import { replayTask } from '../../src/store/atomic/replay.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { setState } from '../support/admin.ts';
import { freshStore, type TestStore } from '../support/engine.ts';
import { shopReceipt as receipt } from '../support/receipts.ts';

let t: TestStore;
beforeAll(async () => {
  t = await freshStore();
});
afterAll(async () => t?.close());

describe('recordDeliveries (group commit)', () => {
  it('decides a batch exactly as one-by-one, in arrival order, including repeats inside the batch', async () => {
    const first = receipt('b-d1', 'b-e1');
    const batch = [
      first,
      { ...receipt('b-d1', 'b-e1'), id: receiptId() },
      receipt('b-d2', 'b-e1'),
      receipt('b-d3', 'b-e3', 'b-e1'),
      receipt('b-d4', 'b-e4'),
    ];
    const recorded = await recordDeliveries(t.store.db, batch);
    expect(recorded.map((r) => r.decision)).toEqual([
      'accepted',
      'duplicate_delivery',
      'duplicate_event',
      'duplicate_task',
      'accepted',
    ]);
    for (const r of recorded.slice(1, 4)) {
      expect('firstSeen' in r && r.firstSeen.id).toBe(first.id);
      expect(r.existing.map((task) => task.id)).toEqual([first.tasks[0]!.id]);
    }
    const again = await recordDeliveries(t.store.db, [receipt('b-d4', 'b-e4'), receipt('b-d5', 'b-e1')]);
    expect(again.map((r) => r.decision)).toEqual(['duplicate_delivery', 'duplicate_event']);
    expect('firstSeen' in again[1]! && again[1].firstSeen.id).toBe(first.id);
  });

  it('creates the task from the first receipt of a delivery key when the batch repeats the key with another body', async () => {
    const first = receipt('body-d1', 'body-e1');
    const repeat = { ...receipt('body-d1', 'body-e1'), body: new TextEncoder().encode('{"changed":true}') };
    const recorded = await recordDeliveries(t.store.db, [first, repeat]);
    expect(recorded.map((r) => r.decision)).toEqual(['accepted', 'duplicate_delivery']);
    const [task] = await rowsOf<{ body: string }>(
      t.store.db,
      sql`select encode(body, 'base64') as body from tasks where id = ${first.tasks[0]!.id}`,
    );
    expect(task?.body).toBe(Buffer.from(first.body).toString('base64'));
    const receipts = await rowsOf<{ id: string; bytes: number }>(
      t.store.db,
      sql`select id, body_bytes as bytes from deliveries where id in (${first.id}, ${repeat.id})`,
    );
    expect(new Map(receipts.map((r) => [r.id, Number(r.bytes)]))).toEqual(
      new Map([[first.id, first.body.byteLength], [repeat.id, repeat.body.byteLength]]),
    );
  });

  it('answers each receipt with the tasks it created, in its order, and the ones another receipt created', async () => {
    const withTasks = (deliveryId: string, eventId: string, actions: string[]): ReceiptInput => ({
      ...receipt(deliveryId, eventId),
      tasks: actions
        .map((action) => ({ id: taskId('shop', 'k-order', action), action, state: 'pending' as const, afterTaskId: null }))
        .sort((a, b) => (a.id < b.id ? -1 : 1)),
    });
    const earlier = await recordDeliveries(t.store.db, [withTasks('k-d0', 'k-e0', ['mail'])]);
    expect(earlier[0]!.decision).toBe('accepted');
    const later = withTasks('k-d2', 'k-e2', ['crm', 'mail', 'erp', 'sms']);
    const [first, second] = await recordDeliveries(t.store.db, [withTasks('k-d1', 'k-e1', ['erp', 'mail']), later]);
    const ids = (r: Recorded | undefined, key: 'created' | 'existing') =>
      r && r.decision === 'accepted' ? r[key].map((task) => task.id) : null;
    const id = (action: string) => taskId('shop', 'k-order', action);
    expect(ids(first, 'created')).toEqual([id('erp')]);
    expect(ids(first, 'existing')).toEqual([id('mail')]);
    const order = later.tasks.map((task) => task.id);
    expect(ids(second, 'created')).toEqual(order.filter((task) => task === id('crm') || task === id('sms')));
    expect(ids(second, 'existing')).toEqual(order.filter((task) => task === id('erp') || task === id('mail')));
  });

  it('many concurrent batches over overlapping keys: one accepted per event, no deadlock, nothing half-written', async () => {
    const events = Array.from({ length: 20 }, (_, i) => `c-e${i}`);
    const batches = Array.from({ length: 12 }, (_, b) =>
      // Each batch holds every event, under its own delivery IDs and in its own order.
      [...events].sort(() => (b % 2 === 0 ? 1 : -1)).map((eventId) => receipt(`c-${b}-${eventId}`, eventId)),
    );
    const results = (await Promise.all(batches.map((batch) => recordDeliveries(t.store.db, batch)))).flat();
    expect(results.filter((r) => r.decision === 'accepted')).toHaveLength(events.length);
    expect(results.filter((r) => r.decision === 'duplicate_event')).toHaveLength(events.length * 11);
    const [row] = await rowsOf<{ n: number }>(t.store.db, sql`select count(*)::int as n from tasks where event_id like 'c-e%'`);
    expect(row!.n).toBe(events.length);
  });
});

describe("a request's headers, and handshakes", () => {
  it("stores a request's headers once, on its first receipt, which its other events name, under whatever IDs it is written", async () => {
    const headers = { 'x-request': 'one' };
    const request = ['h-e1', 'h-e2', 'h-e3'].map((event) => ({ ...receipt(`h-${event}`, event), headers }));
    // Written again under new IDs (ingest's retry on a new connection): the same objects, so the same sharing.
    const rewritten = request.map((r) => ({ ...r, id: receiptId() }));
    const alone = { ...receipt('h-d4', 'h-e4'), headers: { 'x-request': 'two' } };
    await recordDeliveries(t.store.db, [...rewritten, alone]);
    const stored = await rowsOf<{ id: string; headers: Record<string, string> | null; headers_from: string | null }>(
      t.store.db,
      sql`select id, headers, headers_from from deliveries where event_id like 'h-e%' order by seq`,
    );
    const [head] = rewritten;
    expect(stored).toEqual([
      { id: head!.id, headers, headers_from: null },
      { id: rewritten[1]!.id, headers: null, headers_from: head!.id },
      { id: rewritten[2]!.id, headers: null, headers_from: head!.id },
      { id: alone.id, headers: alone.headers, headers_from: null },
    ]);
  });

  it('records a handshake once: a repeat of its key is a duplicate_delivery that writes nothing and names the first', async () => {
    const handshake = (): ReceiptInput => ({ ...receipt('hs-d1', 'hs-d1'), tasks: [], handshake: true });
    const [first, inBatch] = await recordDeliveries(t.store.db, [handshake(), handshake()]);
    const [later] = await recordDeliveries(t.store.db, [handshake()]);
    expect([first!.decision, inBatch!.decision, later!.decision]).toEqual(['handshake', 'duplicate_delivery', 'duplicate_delivery']);
    expect([inBatch!.receipt, later!.receipt]).toEqual([first!.receipt, first!.receipt]);
    const stored = await rowsOf<{ id: string; decision: string }>(t.store.db, sql`select id, decision from deliveries where delivery_id = 'hs-d1'`);
    expect(stored).toEqual([{ id: first!.receipt, decision: 'handshake' }]);
  });
});

describe('task_refs', () => {
  it('holds the keys and inserting transaction of every task, ingested or replayed, written with the task', async () => {
    const two = {
      ...receipt('r-d1', 'r-e1'),
      tasks: ['crm', 'mail']
        .map((action) => ({ id: taskId('shop', 'r-e1', action), action, state: 'pending' as const, afterTaskId: null }))
        .sort((a, b) => (a.id < b.id ? -1 : 1)),
    };
    const one = receipt('r-d2', 'r-e2');
    await recordDeliveries(t.store.db, [two, one]);
    const [single, bulk] = [two.tasks[0]!.id, one.tasks[0]!.id];
    await setState(t.store.db, single, 'failed');
    await setState(t.store.db, bulk, 'cancelled');
    const replayed = await replayTask(t.store.db, { taskId: single, actor: 'test', note: 'again' });
    const bulkReplays = await bulkDecide(t.store.db, 'replay', { states: ['cancelled'] }, { actor: 'test', note: 'again' });
    if (!replayed.done) throw new Error('the replay was refused');
    expect(bulkReplays).toHaveLength(1);

    const refs = await rowsOf<{ id: string; source: string; eventId: string; deliveryId: string; sameTxid: boolean }>(
      t.store.db,
      sql`select t.id, r.source, r.event_id as "eventId", r.delivery_id as "deliveryId", r.txid = t.txid as "sameTxid"
          from tasks t left join task_refs r on r.task_id = t.id`,
    );
    const byId = new Map(refs.map((row) => [row.id, row]));
    // A replay keeps the keys of the task it replays, under its own transaction.
    const expected: [string, ReceiptInput][] = [
      ...two.tasks.map((task): [string, ReceiptInput] => [task.id, two]),
      [bulk, one],
      [replayed.replay, two],
      [bulkReplays[0]!, one],
    ];
    for (const [id, from] of expected) {
      expect(byId.get(id)).toEqual({ id, source: 'shop', eventId: from.eventId, deliveryId: from.id, sameTxid: true });
    }
    // Every task of the file's other tests too, and nothing else.
    expect(refs.every((row) => row.sameTxid)).toBe(true);
    const [count] = await rowsOf<{ n: number }>(t.store.db, sql`select count(*)::int as n from task_refs`);
    expect(count!.n).toBe(refs.length);
  });
});
