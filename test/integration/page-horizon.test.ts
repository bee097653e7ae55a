import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordDeliveries } from '../../src/store/atomic/record.ts';
import { listDeliveries } from '../../src/store/queries/deliveries.ts';
import { listTasks } from '../../src/store/queries/tasks.ts';
import { engine, freshPostgresDatabase, freshStore, type TestDatabase, type TestStore } from '../support/engine.ts';
import { shopReceipt } from '../support/receipts.ts';

let t: TestStore;
let elsewhere: TestDatabase | undefined;
beforeAll(async () => {
  t = await freshStore();
  if (engine() === 'postgres') elsewhere = await freshPostgresDatabase();
});
afterAll(async () => {
  await t?.close();
  await elsewhere?.drop();
});

describe(`list pages (${engine()})`, () => {
  // Transaction IDs are the server's, not the database's: a busy neighbour's transactions that ended while a
  // page was being read held it back, and a row committed before the request was missing from it (about one
  // read in thirty here). 100 requests, two reads each: such a miss rate would pass unseen once in ~900 runs.
  it('show a row committed before the request, while another database on the server commits all the time', async () => {
    const neighbour = elsewhere ? postgres(elsewhere.url!, { max: 6, onnotice: () => {} }) : undefined;
    let busy = true;
    const churn: Promise<void>[] = [];
    if (neighbour) {
      await neighbour`create table work (n int)`;
      for (let i = 0; i < 6; i++) {
        churn.push(
          (async () => {
            while (busy) {
              await neighbour.begin(async (tx) => {
                await tx`insert into work values (1)`;
                await new Promise((resolve) => setTimeout(resolve, Math.random() * 4));
              });
            }
          })(),
        );
      }
    }
    try {
      const missing: string[] = [];
      for (let i = 0; i < 100; i++) {
        const receipt = shopReceipt(`page-d${i}`, `page-e${i}`);
        await recordDeliveries(t.store.db, [receipt]);
        const tasks = await listTasks(t.store.db, { eventId: `page-e${i}` }, { limit: 5, order: 'desc' });
        if (tasks.items.length !== 1) missing.push(`task of page-e${i}`);
        const deliveries = await listDeliveries(t.store.db, { eventId: `page-e${i}` }, { limit: 5, order: 'desc' });
        if (deliveries.items.length !== 1) missing.push(`receipt of page-e${i}`);
      }
      expect(missing).toEqual([]);
    } finally {
      busy = false;
      await Promise.all(churn);
      await neighbour?.end();
    }
  });
});
