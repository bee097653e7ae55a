import { existsSync } from 'node:fs';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { LOCK_FILE } from '../data-dir-lock.ts';
import { compileWasmLightly, MEMORY_START_PARAMS } from '../pglite-memory.ts';
import type { Query } from './catalog.ts';
import { SESSION } from './sql-text.ts';

/** The embedded database copy-data reads from. */
export interface EmbeddedSource {
  query: Query;
  /** The rows of `select`, a whole SELECT statement, in COPY's text format. */
  copyOut(select: string): Promise<Buffer>;
  close(): Promise<void>;
}

/** Whether `dataDir` holds an embedded database: initdb writes `PG_VERSION` into every data directory. */
export function holdsDatabase(dataDir: string): boolean {
  return existsSync(join(dataDir, 'PG_VERSION'));
}

/**
 * Opens a copy of `dataDir`, made in a temporary directory of its own (under TMPDIR) and removed on close.
 * Opening the directory itself would write to it: a start replays the write-ahead log since the last
 * checkpoint and writes a checkpoint of its own (and recovers a directory a killed gateway left), and the
 * gateway may not then find the directory as it left it. The copy is also where copy-data may write — the
 * table that maps transaction IDs (txids.ts). The lock files stay behind: they name the original's holder.
 * Asynchronous, so that the lock's heartbeat keeps beating through a long copy.
 */
export async function openCopy(dataDir: string): Promise<EmbeddedSource> {
  const scratch = await mkdtemp(join(tmpdir(), 'oncehook-copy-data-'));
  const remove = () => rm(scratch, { recursive: true, force: true });
  let pg: PGlite;
  try {
    await cp(dataDir, scratch, { recursive: true, filter: (path) => !basename(path).startsWith(LOCK_FILE) });
    // The gateway's memory settings: copy-data runs where the embedded gateway ran, on as little memory.
    compileWasmLightly();
    pg = await PGlite.create({ dataDir: scratch, startParams: [...PGlite.defaultStartParams, ...MEMORY_START_PARAMS] });
  } catch (error) {
    await remove();
    throw error;
  }
  const close = () => pg.close().finally(remove);
  try {
    await pg.exec(Object.entries(SESSION).map(([name, value]) => `set ${name} = '${value}'`).join(';\n'));
  } catch (error) {
    await close();
    throw error;
  }
  return {
    query: async <T extends object>(text: string, params?: unknown[]) => (await pg.query<T>(text, params)).rows,
    async copyOut(select) {
      const { blob } = await pg.query(`copy (${select}) to '/dev/blob'`);
      return Buffer.from(await blob!.arrayBuffer());
    },
    close,
  };
}
