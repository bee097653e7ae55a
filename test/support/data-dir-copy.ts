import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, type Db } from '../../src/store/connect.ts';

/**
 * Reads an embedded data directory as a kill left it, without recovering it: one process at a time may open a
 * PGlite directory, and the next gateway start must recover the directory itself. So this reads a copy.
 */
export async function readCopy<T>(dataDir: string, read: (db: Db) => Promise<T>): Promise<T> {
  const copy = mkdtempSync(join(tmpdir(), 'oncehook-copy-'));
  cpSync(dataDir, copy, { recursive: true });
  const store = await openStore({ dataDir: copy });
  try {
    return await read(store.db);
  } finally {
    await store.close();
    rmSync(copy, { recursive: true, force: true });
  }
}
