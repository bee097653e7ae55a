import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordDeliveries } from '../../src/store/atomic/record.ts';
import { taskStates } from '../../src/store/queries/stats.ts';
import { ALERTS_SOURCE } from '../../src/store/atomic/alerts.ts';
import { taskTally, type StateCount, type TaskTally } from '../../src/store/queries/task-tally.ts';
import { engine, freshStore, holdTransaction, type TestStore } from '../support/engine.ts';
import { writeBeforeStatement } from '../support/interleave.ts';
import { shopReceipt } from '../support/receipts.ts';

let t: TestStore;
beforeAll(async () => {
  t = await freshStore();
});
afterAll(async () => t?.close());

let made = 0;
async function newTasks(n: number): Promise<void> {
  const start = made;
  made += n;
  await recordDeliveries(t.store.db, Array.from({ length: n }, (_, i) => shopReceipt(`tally-d${start + i}`, `tally-e${start + i}`)));
}

/** Moves `n` tasks now in `from` to `to`, as the forwarder or a person would. */
async function move(n: number, from: string, to: string): Promise<void> {
  await t.store.db.execute(
    sql`update tasks set state = ${to} where id in (select id from tasks where state = ${from} order by id limit ${n})`,
  );
}

/** A tally's sources' tasks, or a full count's, by state. */
const counts = (states: StateCount[] | TaskTally) => Object.fromEntries(('tasks' in states ? states.tasks : states).map((s) => [s.state, s.count]));

describe('task tally', () => {
  it('counts every state as a full count does, through inserts and changes of state', async () => {
    const tally = taskTally(t.store);
    expect(await tally()).toEqual({ tasks: [], alertMessages: [] });
    await newTasks(30);
    await move(20, 'pending', 'succeeded');
    await move(3, 'pending', 'needs_review');
    const first = await tally();
    expect(counts(first)).toEqual({ pending: 7, succeeded: 20, needs_review: 3 });
    const full = await taskStates(t.store.db);
    expect(counts(first)).toEqual(counts(full));
    for (const s of first.tasks) {
      expect(s.oldestAgeSeconds).toBeCloseTo(full.find((f) => f.state === s.state)!.oldestAgeSeconds!, 0);
    }

    await newTasks(12);
    await move(10, 'pending', 'succeeded');
    await move(2, 'needs_review', 'cancelled');
    await move(1, 'needs_review', 'succeeded');
    await move(4, 'pending', 'in_progress');
    expect(counts(await tally())).toEqual(counts(await taskStates(t.store.db)));
    // Another process starting now counts from nothing and agrees.
    expect(counts(await taskStates(t.store.db))).toEqual(counts(await taskTally(t.store)()));
    // Reads at once share one: both would otherwise add the same new tasks.
    await newTasks(5);
    const together = await Promise.all([tally(), tally(), tally()]);
    const truth = counts(await taskStates(t.store.db));
    for (const read of together) expect(counts(read)).toEqual(truth);
    expect(counts(await tally())).toEqual(truth);
  });

  it('reads only the tasks inserted since its last read, not the history', async () => {
    const tally = taskTally(t.store);
    await newTasks(4);
    await move(4, 'pending', 'succeeded');
    const before = counts(await tally());
    // Tasks are never deleted; one removed behind the tally's back shows whether it reads its past again.
    await t.store.db.execute(
      sql`with gone as (delete from tasks where id = (select id from tasks where state = 'succeeded' order by id limit 1) returning id)
          delete from task_refs where task_id in (select id from gone)`,
    );
    await newTasks(2);
    expect(counts(await tally())).toEqual({ ...before, pending: (before.pending ?? 0) + 2 });
    const truth = counts(await taskStates(t.store.db));
    expect(truth.succeeded).toBe(before.succeeded! - 1);
    expect(counts(await taskTally(t.store)())).toEqual(truth);
  });

  it('counts the history in slices at its first read, each task once, those inserted meanwhile too', async () => {
    await newTasks(9);
    await move(5, 'pending', 'succeeded');
    const truth = counts(await taskStates(t.store.db));
    for (const slice of [1, 2, 4, 9, 1_000, Infinity]) expect(counts(await taskTally(t.store, slice)())).toEqual(truth);
    // Statement 1 takes the horizon, 2 and on are the slices: tasks inserted before the first slice and
    // between two land above the horizon and are counted by the read that follows the slices.
    for (const n of [2, 3]) {
      const tally = taskTally(writeBeforeStatement(t.store, n, () => newTasks(3)), 2);
      expect(counts(await tally())).toEqual(counts(await taskStates(t.store.db)));
      await newTasks(2);
      expect(counts(await tally())).toEqual(counts(await taskStates(t.store.db)));
    }
  });

  if (engine() === 'postgres') it('counts a task whose transaction began before a read and committed after it, once', async () => {
    const tally = taskTally(t.store);
    await tally();
    const held = `t_tally_late_${Math.random().toString(16).slice(2)}`;
    const late = await holdTransaction(
      t.database.url!,
      (tx) => tx`insert into tasks (id, source, action, event_id, delivery_id, state, body_sha256)
                 values (${held}, 'shop', 'crm', ${held}, ${held}, 'succeeded', 'x')`,
    );
    try {
      await newTasks(3);
      await move(3, 'pending', 'succeeded');
      const whileOpen = counts(await tally());
      expect(whileOpen).toEqual(counts(await taskStates(t.store.db)));
      await late.commit();
      const after = counts(await tally());
      expect(after.succeeded).toBe(whileOpen.succeeded! + 1);
      expect(after).toEqual(counts(await taskStates(t.store.db)));
      expect(counts(await tally())).toEqual(after);
    } finally {
      await late.commit();
      await late.end();
    }
  });

  it("counts the alerts' messages apart from the sources' tasks", async () => {
    // Last: the tests above compare with a count of every task.
    const tally = taskTally(t.store);
    const before = await tally();
    const message = (id: string, state: string) =>
      t.store.db.execute(sql`insert into tasks (id, source, action, event_id, delivery_id, state, body_sha256)
        values (${id}, ${ALERTS_SOURCE}, 'ops', 'failed', ${id}, ${state}, 'x')`);
    await message('t_tally_alert_sent', 'succeeded');
    await message('t_tally_alert_sent2', 'succeeded');
    await message('t_tally_alert_waiting', 'pending');
    const after = await tally();
    expect(counts(after)).toEqual(counts(before));
    expect(counts(after.alertMessages)).toEqual({ succeeded: 2, pending: 1 });
    // A process starting now counts the history apart too.
    expect(counts((await taskTally(t.store, 2)()).alertMessages)).toEqual({ succeeded: 2, pending: 1 });
    expect(counts(after)).toEqual(counts(await taskStates(t.store.db, sql`source <> ${ALERTS_SOURCE}`)));
    await t.store.db.execute(sql`update tasks set state = 'failed' where id = 't_tally_alert_waiting'`);
    expect(counts((await tally()).alertMessages)).toEqual({ succeeded: 2, failed: 1 });
  });
});
