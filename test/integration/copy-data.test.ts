import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INITDB_IMAGE } from '../../src/store/cluster-image.ts';
import { openStore, type Db } from '../../src/store/connect.ts';
import { LOCK_FILE } from '../../src/store/data-dir-lock.ts';
import { openDurablePglite } from '../../src/store/durable-pglite.ts';
import { CopyDataError, copyData, type CopyEvent, type CopyReport } from '../../src/store/copy/copy-data.ts';
import { migrate, migratePostgresAt } from '../../src/store/migrate.ts';
import { listDeliveries } from '../../src/store/queries/deliveries.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { readCopy } from '../support/data-dir-copy.ts';
import { freshPostgresDatabase, type TestDatabase } from '../support/engine.ts';
import { fillDataDir, fillTaskId } from '../support/filled-data-dir.ts';
import { releasedUpTo } from '../support/migrations.ts';
import { startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres.ts';
import { everyRow } from '../support/table-rows.ts';
import { treeHash } from '../support/tree-hash.ts';

// PGlite into PostgreSQL whatever the project's engine: vitest.config.ts runs this file in the postgres project only.

const root = mkdtempSync(join(tmpdir(), 'oncehook-copy-data-test-'));
const databases: TestDatabase[] = [];

async function freshTarget(): Promise<string> {
  const database = await freshPostgresDatabase();
  databases.push(database);
  return database.url!;
}

async function onTarget<T>(url: string, read: (db: Db) => Promise<T>): Promise<T> {
  const store = await openStore({ databaseUrl: url, poolSize: 1 });
  try {
    return await read(store.db);
  } finally {
    await store.close();
  }
}

const sequences = (db: Db) =>
  rowsOf<{ name: string; last: string | null }>(
    db,
    sql`select sequencename as name, last_value::text as last from pg_sequences where schemaname = current_schema() order by 1`,
  );

const count = async (db: Db, table: string) =>
  (await rowsOf<{ n: number }>(db, sql`select count(*)::int as n from ${sql.identifier(table)}`))[0]!.n;

/**
 * Runs `work` with TMPDIR set to a directory of its own, where copy-data makes its copy of the data directory, and
 * answers what is left there after: nothing, whether the copy succeeded or failed.
 */
async function leftInScratch(work: (scratch: string) => Promise<unknown>): Promise<string[]> {
  const scratch = mkdtempSync(join(root, 'scratch-'));
  const tmp = process.env.TMPDIR;
  process.env.TMPDIR = scratch;
  try {
    await work(scratch);
  } finally {
    if (tmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = tmp;
  }
  return readdirSync(scratch);
}

/**
 * More rows than one batch holds (batches of 500 here, as 5,000 are for a real copy), each delivery in a
 * transaction of its own: more transaction IDs than a young server has used (the last describe). Filled once, as
 * the gateway fills a new directory (seconds: the shipped cluster extracted and flushed); no copy changes it.
 */
const dataDir = join(root, 'data');
let young: PrivatePostgres | undefined;

beforeAll(async () => {
  [young] = await Promise.all([startPrivatePostgres(), fillDataDir(dataDir, { deliveries: 1_200, perTransaction: 1 })]);
}, 180_000);

afterAll(async () => {
  await young?.destroy();
  await Promise.all(databases.map((d) => d.drop()));
  rmSync(root, { recursive: true, force: true });
});

describe('copy-data: an embedded data directory into an empty PostgreSQL database', () => {
  let before: string;
  let target: string;
  let report: CopyReport;
  const events: CopyEvent[] = [];
  let left: string[];

  beforeAll(async () => {
    before = treeHash(dataDir);
    target = await freshTarget();
    left = await leftInScratch(async () => {
      report = await copyData({ dataDir, targetUrl: target, onEvent: (event) => events.push(event), batch: { rows: 500, bytes: 8 * 1024 * 1024 } });
    });
  }, 180_000);

  it('copies every table of the schema row for row, transaction IDs in their order', async () => {
    const source = await readCopy(dataDir, everyRow);
    const empty = Object.keys(source).filter((table) => source[table]!.length === 0);
    expect(empty, 'tables the fixture leaves empty, whose copy nothing checks: fill them in test/support/filled-data-dir.ts').toEqual([]);
    const copied = await onTarget(target, everyRow);
    expect(Object.keys(copied).sort()).toEqual(Object.keys(source).sort());
    for (const table of Object.keys(source)) expect(copied[table], table).toEqual(source[table]);
    expect(report.tables.map((t) => t.name).sort()).toEqual(Object.keys(source).sort());
    expect(report.tables.find((t) => t.name === 'deliveries')?.rows).toBe(1_200);
  });

  it('says how far it got, batch by batch, and each table as it is done', () => {
    const deliveries = events.filter((e) => 'table' in e && e.table === 'deliveries');
    expect(deliveries.map((e) => (e.kind === 'rows' ? e.copied : e.kind))).toEqual(['table', 500, 1_000, 1_200, 'copied']);
    expect(events.filter((e) => e.kind === 'copied').map((e) => 'table' in e && e.table).sort()).toEqual(report.tables.map((t) => t.name).sort());
  });

  it('changes nothing in the data directory, and leaves neither its copy nor a lock behind', () => {
    expect(treeHash(dataDir)).toBe(before);
    expect(left).toEqual([]);
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
  });

  it('leaves each sequence where the data directory had it, past IDs given out and since deleted', async () => {
    const source = await readCopy(dataDir, sequences);
    expect(source.find((s) => s.name === 'attempts_id_seq')?.last).toBe('5');
    expect(await onTarget(target, sequences)).toEqual(source);
  });

  it('keeps a lease held when the gateway stopped, and an unknown outcome, as they were', async () => {
    const tasks = await onTarget(target, (db) =>
      rowsOf<{ id: string; state: string; lease_owner: string | null }>(db, sql`select id, state, lease_owner from tasks where id in (${fillTaskId(1)}, ${fillTaskId(2)}) order by state`),
    );
    expect(tasks).toEqual([
      { id: fillTaskId(1), state: 'in_progress', lease_owner: 'worker-gone' },
      { id: fillTaskId(2), state: 'outcome_unknown', lease_owner: null },
    ]);
  });

  it('fired no trigger while copying, and leaves them on afterwards', async () => {
    // The copy's rows equal the source's (above), task_transitions included: no trigger added one. On now:
    await onTarget(target, async (db) => {
      const transitions = await count(db, 'task_transitions');
      await db.execute(
        sql`insert into tasks (id, source, action, event_id, delivery_id, state, body_sha256) values ('after-copy', 'shop', 'crm', 'e', 'd', 'needs_review', 'x')`,
      );
      expect(await count(db, 'task_transitions')).toBe(transitions + 1);
      expect(await rowsOf(db, sql`select task_id from task_refs where task_id = 'after-copy'`)).toHaveLength(1);
      await db.execute(sql`delete from task_refs where task_id = 'after-copy'`);
      await db.execute(sql`delete from task_transitions where task_id = 'after-copy'`);
      await db.execute(sql`delete from tasks where id = 'after-copy'`);
    });
  });

  it('refuses a target that already holds oncehook data, changing nothing there', async () => {
    const rows = await onTarget(target, everyRow);
    await expect(copyData({ dataDir, targetUrl: target })).rejects.toThrow(/already holds oncehook data \(rows in alert_states, attempts/);
    expect(await onTarget(target, everyRow)).toEqual(rows);
  });
});

describe('copy-data on a small data directory', () => {
  const dataDir = join(root, 'small');

  beforeAll(async () => {
    await fillDataDir(dataDir, { deliveries: 20, perTransaction: 10 });
  }, 60_000);

  it('refuses a database with tables of another application, before writing anything to it', async () => {
    const url = await freshTarget();
    const client = postgres(url, { max: 1, onnotice: () => {} });
    try {
      await client`create table orders (id int primary key)`;
      await expect(copyData({ dataDir, targetUrl: url })).rejects.toThrow(/not empty: it has public\.orders, which are not oncehook's/);
      expect(await client`select to_regclass('deliveries') as found`).toEqual([{ found: null }]);
    } finally {
      await client.end();
    }
  });

  it('refuses a target an oncehook gateway is connected to', async () => {
    const url = await freshTarget();
    const gateway = postgres(url, { max: 1, onnotice: () => {}, connection: { application_name: 'oncehook' } });
    try {
      await gateway`select 1`;
      await expect(copyData({ dataDir, targetUrl: url })).rejects.toThrow(/a gateway is connected to the target database \(its sessions \d+\): stop it/);
    } finally {
      await gateway.end();
    }
  });

  it("refuses a data directory at an older release's schema, and says how to bring it up, changing nothing in it", async () => {
    const older = join(root, 'older');
    // From the cluster before any migration: a new directory would start from this build's migrated one.
    await (await openDurablePglite(older, INITDB_IMAGE)).client.close();
    const store = await openStore({ dataDir: older });
    await migrate(store, undefined, releasedUpTo('0016_handshake_receipts'));
    await store.close();
    const hash = treeHash(older);
    const url = await freshTarget();
    const refused = await copyData({ dataDir: older, targetUrl: url }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(CopyDataError);
    expect((refused as Error).message).toMatch(/has 17 of this build's \d+ migrations: an older release's gateway wrote it.*oncehook migrate/);
    expect(treeHash(older)).toBe(hash);
  });

  it('refuses a directory without an embedded database in it, creating nothing', async () => {
    const missing = join(root, 'missing');
    await expect(copyData({ dataDir: missing, targetUrl: await freshTarget() })).rejects.toThrow(/no embedded database in .*missing/);
    expect(existsSync(missing)).toBe(false);
  });

  it('commits nothing when the target refuses a row: its tables are left empty, their triggers on', async () => {
    const url = await freshTarget();
    await migratePostgresAt(url);
    const client = postgres(url, { max: 1, onnotice: () => {} });
    try {
      // A constraint the data directory's rows break, as a target with stricter rules than the source would.
      await client`alter table tasks add constraint no_review check (state <> 'needs_review')`;
      await expect(copyData({ dataDir, targetUrl: url })).rejects.toThrow(/no_review/);
      const [rows] = await client<{ n: number }[]>`select (select count(*) from deliveries) + (select count(*) from tasks) + (select count(*) from delivery_keys) as n`;
      expect(Number(rows!.n)).toBe(0);
      const disabled = await client`select tgname from pg_trigger where tgrelid = 'tasks'::regclass and not tgisinternal and tgenabled <> 'O'`;
      expect(disabled).toHaveLength(0);
    } finally {
      await client.end();
    }
  });

  it('stopped midway, rolls back, removes its copy of the data directory and its lock, and can simply be run again', async () => {
    const url = await freshTarget();
    const stop = new AbortController();
    const reason = new CopyDataError('stopped');
    let meanwhile: string[] = [];
    const left = await leftInScratch(async (scratch) => {
      const onEvent = (event: CopyEvent) => {
        if (event.kind !== 'rows' || stop.signal.aborted) return;
        meanwhile = readdirSync(scratch);
        stop.abort(reason);
      };
      await expect(copyData({ dataDir, targetUrl: url, signal: stop.signal, onEvent })).rejects.toBe(reason);
    });
    expect(meanwhile).toHaveLength(1);
    expect(left).toEqual([]);
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
    const rows = await onTarget(url, everyRow);
    expect(Object.values(rows).flat()).toEqual([]);
    expect(Object.keys(rows)).toContain('deliveries');
    // Migrated and empty, the target is taken as it is.
    await copyData({ dataDir, targetUrl: url });
    expect(await onTarget(url, everyRow)).toEqual(await readCopy(dataDir, everyRow));
  });
});

describe('copy-data onto a young server, which has used fewer transaction IDs than the copied rows were written in', () => {
  it('uses up IDs to make room, and the admin lists show every copied delivery at once', async () => {
    const cluster = young!;
    const report = await copyData({ dataDir, targetUrl: cluster.url });
    expect(report.transactions).toBeGreaterThan(1_000);
    expect(report.idsUsed).toBeGreaterThan(0);
    const listed = await onTarget(cluster.url, async (db) => {
      const ids: string[] = [];
      let cursor: string | undefined;
      for (;;) {
        const page = await listDeliveries(db, {}, { limit: 500, order: 'asc', cursor });
        ids.push(...page.items.map((d) => d.deliveryId));
        if (!page.hasMore) return ids;
        cursor = page.nextCursor!;
      }
    });
    expect(listed).toHaveLength(1_200);
    expect(listed.slice(0, 3)).toEqual(['fill-d1', 'fill-d2', 'fill-d3']);
  });
});
