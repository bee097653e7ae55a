import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { createLogger } from '../../src/log.ts';
import { startPurger } from '../../src/retention/purger.ts';
import { recordDeliveries } from '../../src/store/atomic/record.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { shopConfig } from '../support/deliveries.ts';
import { engine, freshStore, holdTransaction, type TestStore } from '../support/engine.ts';
import { shopReceipt } from '../support/receipts.ts';

// A second of retention, so rounds a little over a second apart see new tasks expire between them.
const RETENTION_MS = 1000;
const config = parseConfig(JSON.stringify(shopConfig(undefined, { retention: `${RETENTION_MS}ms` })), 'test').config;

let t: TestStore;
beforeAll(async () => {
  t = await freshStore();
});
afterAll(async () => t?.close());

async function newTasks(prefix: string, n: number, state: string): Promise<string[]> {
  const receipts = Array.from({ length: n }, (_, i) => shopReceipt(`${prefix}-d${i}`, `${prefix}-e${i}`));
  await recordDeliveries(t.store.db, receipts);
  const ids = receipts.map((r) => r.tasks[0]!.id);
  await setState(ids, state);
  return ids;
}

/** As every transition does, the change is dated now: retention counts from a task's last change. */
async function setState(ids: string[], state: string): Promise<void> {
  await t.store.db.execute(
    sql`update tasks set state = ${state}, updated_at = now() where id in (select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))`,
  );
}

async function withBody(ids: string[]): Promise<string[]> {
  const rows = await rowsOf<{ id: string }>(
    t.store.db,
    sql`select id from tasks where body is not null and id in (select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb)) order by id`,
  );
  return rows.map((row) => row.id);
}

const expire = () => sleep(RETENTION_MS + 100);

describe('retention rounds', () => {
  it('purges, batch after batch, what finished longer ago than retention, and a task once it has finished and expired', async () => {
    const purger = startPurger(config, t.store, createLogger('silent'), { intervalMs: 3_600_000, batchSize: 2 });
    try {
      const first = await newTasks('r1', 5, 'succeeded');
      const review = await newTasks('r1-review', 1, 'needs_review');
      const sent = await newTasks('r1-pending', 1, 'pending');
      await expire();
      expect(await purger.runOnce()).toBe(5);
      expect(await withBody([...first, ...review, ...sent])).toEqual([...review, ...sent].sort());

      const second = await newTasks('r2', 3, 'failed');
      await setState(review, 'cancelled');
      await expire();
      expect(await purger.runOnce()).toBe(4);
      expect(await withBody([...second, ...review])).toEqual([]);

      // Received long ago, finished just now: its retention starts now.
      await setState(sent, 'succeeded');
      expect(await purger.runOnce()).toBe(0);
      await expire();
      expect(await purger.runOnce()).toBe(1);
      expect(await withBody(sent)).toEqual([]);
      expect(await purger.runOnce()).toBe(0);
    } finally {
      await purger.stop();
    }
  });

  if (engine() === 'postgres') it('purges a row it skipped as locked, and a task a transaction committed late, in the next round', async () => {
    const purger = startPurger(config, t.store, createLogger('silent'), { intervalMs: 3_600_000 });
    try {
      await purger.runOnce();
      const [locked] = await newTasks('locked', 1, 'succeeded');
      await expire();
      const holder = await holdTransaction(t.database.url!, (tx) => tx`select id from tasks where id = ${locked!} for update`);
      try {
        expect(await purger.runOnce()).toBe(0);
      } finally {
        await holder.commit();
        await holder.end();
      }
      expect(await purger.runOnce()).toBe(1);

      // Created when its transaction began; committed after a round whose cutoff had passed that time.
      const late = `t_late_${Math.random().toString(16).slice(2)}`;
      const writer = await holdTransaction(
        t.database.url!,
        (tx) => tx`insert into tasks (id, source, action, event_id, delivery_id, state, body, body_sha256)
                   values (${late}, 'shop', 'crm', ${late}, ${late}, 'succeeded', '\\x00', 'x')`,
      );
      try {
        await expire();
        expect(await purger.runOnce()).toBe(0);
      } finally {
        await writer.commit();
        await writer.end();
      }
      expect(await purger.runOnce()).toBe(1);
      expect(await withBody([late])).toEqual([]);
    } finally {
      await purger.stop();
    }
  });
});
