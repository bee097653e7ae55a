import fs, { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createMetrics, observeStore } from '../../src/metrics.ts';
import { recordDeliveries } from '../../src/store/atomic/record.ts';
import { openStore } from '../../src/store/connect.ts';
import { fileSystemFlushReports } from '../../src/store/data-dir-flush.ts';
import { migrate } from '../../src/store/migrate.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { engine, freshStore } from '../support/engine.ts';
import { shopReceipt } from '../support/receipts.ts';

describe('commits are on disk when they return', () => {
  it('on PGlite on disk each commit flushes to the host before it returns; PostgreSQL flushes its own', async () => {
    if (engine() === 'postgres') {
      const t = await freshStore();
      try {
        expect(t.store.diskSyncs).toBeNull();
      } finally {
        await t.close();
      }
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), 'oncehook-durable-'));
    try {
      let store = await openStore({ dataDir: dir });
      // A new data directory is flushed whole once, before anything is stored in it.
      const files = readdirSync(dir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).length;
      expect(files).toBeGreaterThan(100);
      // On Linux in one flush of the whole file system, elsewhere file by file.
      if (fileSystemFlushReports()) expect(store.diskSyncs!.fileSystems).toBe(1);
      else expect(store.diskSyncs!.count).toBeGreaterThanOrEqual(files);
      await migrate(store, undefined);
      const [settings] = await rowsOf<{ fsync: string; method: string; buffers: string }>(
        store.db,
        sql`select current_setting('fsync') as fsync, current_setting('wal_sync_method') as method, current_setting('shared_buffers') as buffers`,
      );
      // The memory settings come after the durability ones, and change none of them.
      expect(settings).toEqual({ fsync: 'on', method: 'fsync', buffers: '16MB' });

      const before = store.diskSyncs!.count;
      for (let i = 0; i < 20; i++) await recordDeliveries(store.db, [shopReceipt(`durable-d${i}`, `durable-e${i}`)]);
      expect(store.diskSyncs!.count - before).toBeGreaterThanOrEqual(20);

      const metrics = createMetrics();
      observeStore(metrics, store);
      const text = await metrics.registry.metrics();
      expect(text).toMatch(new RegExp(`^oncehook_embedded_disk_syncs_total ${store.diskSyncs!.count}$`, 'm'));
      expect(text).toMatch(/^oncehook_embedded_disk_sync_seconds_total [\d.e-]+$/m);

      await store.close();
      store = await openStore({ dataDir: dir });
      expect(store.diskSyncs!.count).toBeLessThan(files);
      const [row] = await rowsOf<{ n: number }>(store.db, sql`select count(*)::int as n from deliveries`);
      expect(row!.n).toBe(20);
      await store.close();

      // A first start killed after initdb's copy and before that flush is over leaves no mark of the flush:
      // the next start flushes the directory whole, though it is not new.
      rmSync(join(dir, '.oncehook-flushed'));
      store = await openStore({ dataDir: dir });
      // On Linux in one flush of the whole file system, elsewhere file by file.
      if (fileSystemFlushReports()) expect(store.diskSyncs!.fileSystems).toBe(1);
      else expect(store.diskSyncs!.count).toBeGreaterThanOrEqual(files);
      await store.close();
      store = await openStore({ dataDir: dir });
      expect(store.diskSyncs!.count).toBeLessThan(files);
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  if (engine() === 'pglite') it('fails a commit whose flush fails instead of reporting it done', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncehook-durable-'));
    const realFsync = fs.fsyncSync;
    const store = await openStore({ dataDir: dir });
    try {
      await store.db.execute(sql`create table probe (x int)`);
      fs.fsyncSync = () => {
        throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });
      };
      syncBuiltinESMExports();
      await expect(store.db.execute(sql`insert into probe values (1)`)).rejects.toThrow();
    } finally {
      fs.fsyncSync = realFsync;
      syncBuiltinESMExports();
      await store.close().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    }
  });

  if (engine() === 'pglite') it('keeps an in-memory PGlite (tests only) as it is: nothing to flush', async () => {
    const store = await openStore({});
    try {
      expect(store.diskSyncs).toBeNull();
    } finally {
      await store.close();
    }
  });
});
