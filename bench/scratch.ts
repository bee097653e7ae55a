import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { openStore, type Store } from '../src/store/connect.ts';
import { migrate } from '../src/store/migrate.ts';

export interface Scratch {
  store: Store;
  /** Closes the store and drops the database (PGlite: removes its directory), unless `keep`. */
  close(keep?: boolean): Promise<void>;
}

/**
 * A migrated scratch database named `name` for a bench of millions of rows: on the PostgreSQL server of `pgUrl`
 * (made afresh, or the one a kept run left when `reuse`), or embedded PGlite in a temporary directory.
 */
export async function openScratch(name: string, options: { pgUrl: string; pglite?: boolean | undefined; reuse?: boolean | undefined }): Promise<Scratch> {
  let url: string | undefined;
  let dir: string | undefined;
  const server = () => postgres(options.pgUrl, { max: 1, onnotice: () => {} });
  if (options.pglite) {
    dir = mkdtempSync(join(tmpdir(), `${name}-`));
  } else {
    if (!options.reuse) {
      const admin = server();
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.unsafe(`create database ${name}`);
      await admin.end();
    }
    const target = new URL(options.pgUrl);
    target.pathname = `/${name}`;
    url = target.toString();
  }
  const store = await openStore({ databaseUrl: url, dataDir: dir });
  await migrate(store, url);
  return {
    store,
    async close(keep = false) {
      await store.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
      if (url && !keep) {
        const admin = server();
        await admin.unsafe(`drop database if exists ${name} with (force)`);
        await admin.end();
      }
    },
  };
}
