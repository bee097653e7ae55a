import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordDeliveries } from '../../src/store/atomic/record.ts';
import { taskView } from '../../src/store/task-view.ts';
import { freshStore, type TestStore } from '../support/engine.ts';
import { shopReceipt } from '../support/receipts.ts';

let t: TestStore;
beforeAll(async () => {
  t = await freshStore();
});
afterAll(async () => {
  await t?.close();
});

describe('a task as a person inspects it', () => {
  it('reads the task and its ledger as of one moment, however often an attempt is claimed and ends meanwhile', async () => {
    const [recorded] = await recordDeliveries(t.store.db, [shopReceipt('view-d1', 'view-e1')]);
    const id = recorded!.decision === 'accepted' ? recorded!.created[0]!.id : '';
    await t.store.db.execute(sql`update tasks set state = 'in_progress', attempts = 1, claims = 1, claimed_at = now(),
      claim_kind = 'send' where id = ${id}`);
    // Each flip changes the task and its attempt in one statement, as a claim and a finish do: in any one
    // snapshot the task is in progress exactly when its attempt has no row, and is shown in flight.
    const flip = () =>
      t.store.db.execute(sql`with task as (
          update tasks set state = case when state = 'in_progress' then 'succeeded' else 'in_progress' end
          where id = ${id} returning state),
        gone as (delete from attempts where task_id = ${id} and (select state from task) = 'in_progress')
        insert into attempts (task_id, claim, number, started_at, finished_at, class)
        select ${id}, 1, 1, now(), now(), 'success' from task where state = 'succeeded'`);
    let flipping = true;
    const flipper = (async () => {
      while (flipping) await flip();
    })();
    const torn: string[] = [];
    try {
      for (let i = 0; i < 100; i++) {
        const view = (await taskView(t.store.db, id))!;
        const open = view.ledger[0]?.finishedAt === null;
        if ((view.state === 'in_progress') !== open || view.ledger.length !== 1) {
          torn.push(`${view.state} with ${view.ledger.length} attempts, the first ${open ? 'in flight' : 'ended'}`);
        }
      }
    } finally {
      flipping = false;
      await flipper;
    }
    expect(torn).toEqual([]);
  });
});
