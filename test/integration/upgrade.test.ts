import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { reclaimExpiredLeases } from '../../src/store/atomic/claim.ts';
import { recordDeliveries } from '../../src/store/atomic/record.ts';
import { openStore, type Store } from '../../src/store/connect.ts';
import { migrate, MIGRATIONS_FOLDER } from '../../src/store/migrate.ts';
import { deliveryView } from '../../src/store/queries/deliveries.ts';
import { listTasks } from '../../src/store/queries/tasks.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { freshDatabase, freshStore, type TestDatabase } from '../support/engine.ts';
import { migrationsUpTo, releasedUpTo, schemaOf } from '../support/migrations.ts';
import { shopReceipt } from '../support/receipts.ts';

const receipt = (n: number) => shopReceipt(`up-d${n}`, `up-e${n}`);

/**
 * Receipts recorded on an earlier release's schema by today's recordDeliveries, which keeps their bytes in
 * delivery_bodies (migration 0022) beside the function: that table stands in for the call and is gone again after it,
 * as an older release never had it.
 */
async function recordBefore(db: Store['db'], receipts: Parameters<typeof recordDeliveries>[1]) {
  await db.execute(sql`create table delivery_bodies (delivery_id text primary key, body bytea not null)`);
  await recordDeliveries(db, receipts);
  await db.execute(sql`drop table delivery_bodies`);
}

let database: TestDatabase | undefined;
let store: Store | undefined;
const folders: string[] = [];
afterAll(async () => {
  await store?.close();
  await database?.drop();
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

describe('upgrading a database that holds tasks', () => {
  it('to task_refs (migration 0007): every earlier task is listed, paged and found by receipt and event', async () => {
    database = await freshDatabase();
    store = await openStore({ databaseUrl: database.url });
    const before = releasedUpTo('0006_claim_tasks');
    folders.push(before.migrationsFolder);
    // Each run says what it applied: `oncehook migrate` prints it.
    expect(await migrate(store, database.url, before)).toEqual({ applied: 7, total: 7 });
    const old = [receipt(1), receipt(2), receipt(3)];
    await recordBefore(store.db, old.slice(0, 2));
    await recordBefore(store.db, old.slice(2));

    const shipped = (JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as { entries: unknown[] }).entries.length;
    expect(await migrate(store, database.url)).toEqual({ applied: shipped - 7, total: shipped });
    expect(await migrate(store, database.url)).toEqual({ applied: 0, total: shipped });
    await recordDeliveries(store.db, [receipt(4)]);

    const [refs] = await rowsOf<{ n: number; matching: number }>(
      store.db,
      sql`select count(*)::int as n,
            count(*) filter (where r.txid = t.txid and r.source = t.source and r.event_id = t.event_id
              and r.delivery_id = t.delivery_id)::int as matching
          from tasks t left join task_refs r on r.task_id = t.id`,
    );
    expect(refs).toEqual({ n: 4, matching: 4 });

    const pages: string[] = [];
    let cursor: string | undefined;
    for (let more = true; more; ) {
      const page = await listTasks(store.db, {}, { limit: 2, order: 'asc', cursor });
      pages.push(...page.items.map((task) => task.eventId));
      cursor = page.nextCursor ?? undefined;
      more = page.hasMore;
    }
    // In inserting-transaction order; the first two shared one transaction, ordered by task ID within it.
    expect([...pages.slice(0, 2)].sort()).toEqual(['up-e1', 'up-e2']);
    expect(pages.slice(2)).toEqual(['up-e3', 'up-e4']);

    const byEvent = await listTasks(store.db, { eventId: 'up-e2' }, { limit: 10, order: 'desc' });
    expect(byEvent.items.map((task) => task.id)).toEqual([old[1]!.tasks[0]!.id]);
    const view = await deliveryView(store.db, old[2]!.id);
    expect(view?.tasks.map((task) => task.id)).toEqual([old[2]!.tasks[0]!.id]);
  });
});

describe('upgrading a database whose failures were replayed', () => {
  it('to effect_replay (migration 0011): replays that succeeded before are written on their chains, later ones by the trigger', async () => {
    const replayed = await freshDatabase();
    const own = await openStore({ databaseUrl: replayed.url });
    try {
      const before = releasedUpTo('0010_waiting_steps_index');
      folders.push(before.migrationsFolder);
      await migrate(own, replayed.url, before);
      const [done, undone] = [receipt(11), receipt(12)];
      await recordBefore(own.db, [done, undone]);
      const [doneId, undoneId] = [done.tasks[0]!.id, undone.tasks[0]!.id];
      // Under 0010: the first failed, its replay failed, and a replay of that replay succeeded; the second's replay waits.
      await own.db.execute(sql`update tasks set state = 'failed' where id in (${doneId}, ${undoneId})`);
      const copy = (id: string, of: string, state: string) => sql`insert into tasks (id, source, action, event_id, delivery_id, state, body_sha256, replay_of)
        select ${id}, source, action, event_id, delivery_id, ${state}, body_sha256, ${of} from tasks where id = ${of}`;
      await own.db.execute(copy('t_up_r1', doneId, 'failed'));
      await own.db.execute(copy('t_up_r2', 't_up_r1', 'succeeded'));
      await own.db.execute(copy('t_up_r3', undoneId, 'pending'));

      await migrate(own, replayed.url);
      const marks = async () =>
        Object.fromEntries(
          (await rowsOf<{ id: string; effect: string | null }>(own.db, sql`select id, effect_replay as effect from tasks order by id`)).map((t) => [t.id, t.effect]),
        );
      expect(await marks()).toEqual({ [doneId]: 't_up_r2', [undoneId]: null, t_up_r1: 't_up_r2', t_up_r2: null, t_up_r3: null });

      await own.db.execute(sql`update tasks set state = 'succeeded' where id = 't_up_r3'`);
      expect((await marks())[undoneId]).toBe('t_up_r3');
    } finally {
      await own.close();
      await replayed.drop();
    }
  });
});

describe('upgrading a database with an attempt in flight', () => {
  it('to the ledger written when an attempt ends (migration 0027): the attempt stays on record, and its reclaim writes it', async () => {
    const flying = await freshDatabase();
    const own = await openStore({ databaseUrl: flying.url });
    try {
      const before = migrationsUpTo('0026_order_latest_sent');
      folders.push(before.migrationsFolder);
      await migrate(own, flying.url, before);
      // Under 0026 a claim opened the attempt's row and its finish closed it: one in flight (its worker gone), one ended.
      const task = (id: string, state: string) => sql`insert into tasks (id, source, action, event_id, delivery_id, state,
          body_sha256, attempts, lease_owner, lease_expires_at)
        values (${id}, 'shop', 'crm', ${id}, ${id}, ${state}, 'x', 1, ${state === 'in_progress' ? 'gone' : null},
          ${state === 'in_progress' ? sql`now() - interval '1 second'` : null})`;
      await own.db.execute(task('t_up_flying', 'in_progress'));
      await own.db.execute(task('t_up_ended', 'succeeded'));
      await own.db.execute(sql`insert into attempts (task_id, number, kind, started_at, finished_at, class)
        values ('t_up_flying', 1, 'send', '2026-01-02 03:04:05.123456+00', null, null),
               ('t_up_ended', 1, 'send', '2026-01-02 03:04:05+00', '2026-01-02 03:04:06+00', 'success')`);

      await migrate(own, flying.url);
      const rows = (id: string) =>
        rowsOf<{ number: number; claim: number | null; class: string | null; started: string }>(own.db,
          sql`select number, claim, class, to_char(started_at at time zone 'UTC', 'HH24:MI:SS.US') as started
            from attempts where task_id = ${id} order by id`);
      // In flight: noted on its task as this build's claim notes it, with no row until it ends.
      const [noted] = await rowsOf<{ claims: number; kind: string; at: string }>(own.db,
        sql`select claims, claim_kind as kind, to_char(claimed_at at time zone 'UTC', 'HH24:MI:SS.US') as at
          from tasks where id = 't_up_flying'`);
      expect(noted).toEqual({ claims: 1, kind: 'send', at: '03:04:05.123456' });
      expect(await rows('t_up_flying')).toEqual([]);
      expect(await rows('t_up_ended')).toEqual([{ number: 1, claim: null, class: 'success', started: '03:04:05.000000' }]);

      expect((await reclaimExpiredLeases(own.db)).map((t) => t.id)).toEqual(['t_up_flying']);
      expect(await rows('t_up_flying')).toEqual([{ number: 1, claim: 1, class: 'lease_expired', started: '03:04:05.123456' }]);
    } finally {
      await own.close();
      await flying.drop();
    }
  });
});

describe('upgrading from each earlier release', () => {
  it('ends with the schema and functions of a database this build made new', async () => {
    const made = await freshStore();
    const expected = await schemaOf(made.store.db).finally(() => made.close());
    expect(expected.filter((line) => line.startsWith('function '))).not.toHaveLength(0);
    // The first release; the one that made the claim a function; the one that made the limited claim; the last whose
    // migrations created the functions.
    for (const last of ['0000_init', '0006_claim_tasks', '0013_actions_that_call_apis', '0021_record_known_deliveries']) {
      const upgraded = await freshDatabase();
      const own = await openStore({ databaseUrl: upgraded.url });
      try {
        const release = releasedUpTo(last);
        folders.push(release.migrationsFolder);
        await migrate(own, upgraded.url, release);
        await migrate(own, upgraded.url);
        expect(await schemaOf(own.db), `upgraded from ${last}`).toEqual(expected);
      } finally {
        await own.close();
        await upgraded.drop();
      }
    }
    // Five databases made and migrated, on a machine other test files share.
  }, 120_000);
});
