import { PGlite } from '@electric-sql/pglite';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { clusterTar, type Seeded } from './cluster-image.ts';
import type { DiskSyncs } from './data-dir-flush.ts';
import { lockDataDir } from './data-dir-lock.ts';
import { openDurablePglite } from './durable-pglite.ts';
import { compiledPglite, pgliteBundle } from './pglite-artifacts.ts';
import { compileWasmLightly, MEMORY_START_PARAMS } from './pglite-memory.ts';
import { preparePglite } from './prepared-pglite.ts';
import * as schema from './schema.ts';
import type { Db, Store, StoreOptions } from './store.ts';

let pristineCluster: Promise<Blob | undefined> | undefined;

/**
 * PGlite's own start parameters with a data directory's buffer pool (pglite-memory.ts): PostgreSQL's default of
 * 128 MB was a fifth of each test database's start (0.65 s of CPU), for databases that hold a few MB.
 */
const IN_MEMORY_START = [...PGlite.defaultStartParams, ...MEMORY_START_PARAMS];

/**
 * An in-memory PGlite (tests only) starting from a freshly initialised cluster: the image a new data directory
 * starts from (cluster-image.ts), unpacked once in a process, or `memoryImage`. The suites make hundreds of these;
 * PGlite's initdb took 2.5–3.5 s of each process's first, unpacking the image ~0.3 s. Without a usable image, the
 * first runs initdb and the rest load its cluster as initdb left it. On baseline code, as a data directory's: the
 * suites' short-lived databases paid more for V8 optimising PGlite's functions than the optimised code saved them
 * (two integration files on PGlite: 15–17 s of CPU, 11 on baseline code only).
 */
async function inMemoryPglite(memoryImage: Blob | undefined): Promise<PGlite> {
  compileWasmLightly();
  const artifacts = { pgliteWasmModule: await compiledPglite(), fsBundle: await pgliteBundle(), startParams: IN_MEMORY_START };
  const image = memoryImage ?? (await (pristineCluster ??= clusterTar()).catch(() => undefined));
  if (image) return PGlite.create({ loadDataDir: image, ...artifacts });
  const client = await PGlite.create(artifacts);
  const dumped = client.dumpDataDir('none');
  pristineCluster = dumped;
  try {
    await dumped;
  } catch (error) {
    await client.close();
    throw error;
  }
  return client;
}

/** A store on embedded PGlite (connect.ts): on disk in `dataDir`, or in memory for tests. */
export async function openPglite(dataDir: string | undefined, logger: StoreOptions['logger'], memoryImage: Blob | undefined): Promise<Store> {
  let client: PGlite;
  let diskSyncs: DiskSyncs | null = null;
  let release = () => {};
  if (dataDir) {
    release = lockDataDir(dataDir);
    try {
      let seeded: Seeded;
      ({ client, syncs: diskSyncs, seeded } = await openDurablePglite(dataDir));
      if (seeded.from === 'image') logger?.info(`a new data directory: its cluster came from the image shipped with oncehook`);
      if (seeded.from === 'initdb') logger?.warn({ reason: seeded.reason }, `a new data directory: PGlite's initdb made its cluster, which takes about 1 GiB of memory for a few seconds`);
    } catch (error) {
      release();
      throw error;
    }
  } else {
    client = await inMemoryPglite(memoryImage);
  }
  preparePglite(client);
  const db = drizzlePglite(client, { schema }) as unknown as Db;
  return {
    kind: 'pglite',
    db,
    diskSyncs,
    async listen(channel, onNotify, onSubscribe) {
      const unlisten = await client.listen(channel, onNotify);
      // In-process: the subscription never drops, so one catch-up fetch is all a worker needs.
      onSubscribe();
      return () => unlisten();
    },
    lane() {
      return { kind: 'pglite', db, abandon: null, close: async () => {} };
    },
    async close() {
      if (!client.closed) await client.close();
      release();
    },
  };
}
