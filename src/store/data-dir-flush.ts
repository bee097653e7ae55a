import { closeSync, existsSync, fsyncSync, openSync, readdirSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';

/** How often, and for how long, the embedded database waited for the disk. */
export interface DiskSyncs {
  count: number;
  seconds: number;
}

/** One flush to disk, counted and timed. */
export function flushFd(fd: number, syncs: DiskSyncs): void {
  const started = performance.now();
  fsyncSync(fd);
  syncs.count++;
  syncs.seconds += (performance.now() - started) / 1000;
}

export function flushPath(path: string, syncs: DiskSyncs): void {
  const fd = openSync(path, 'r');
  try {
    flushFd(fd, syncs);
  } finally {
    closeSync(fd);
  }
}

/** The files under `path`, and its directories, each after the directories it holds. */
function treeOf(path: string, tree: { files: string[]; dirs: string[] } = { files: [], dirs: [] }) {
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    if (entry.isDirectory()) treeOf(join(path, entry.name), tree);
    else if (entry.isFile()) tree.files.push(join(path, entry.name));
  }
  tree.dirs.push(path);
  return tree;
}

async function flushFile(path: string, syncs: DiskSyncs): Promise<void> {
  const file = await open(path, 'r');
  try {
    const started = performance.now();
    await file.sync();
    syncs.count++;
    syncs.seconds += (performance.now() - started) / 1000;
  } finally {
    await file.close();
  }
}

/**
 * Flushes every file and directory under `path`: the files several at a time, since the file system commits
 * flushes that wait together at once (a new cluster's 971 files: 1.25 s one by one, 0.43–0.48 s eight at a
 * time), then the directories, each after what it holds.
 */
export async function flushTree(path: string, syncs: DiskSyncs): Promise<void> {
  const { files, dirs } = treeOf(path);
  let next = 0;
  const flusher = async () => {
    while (next < files.length) await flushFile(files[next++]!, syncs);
  };
  await Promise.all(Array.from({ length: 8 }, flusher));
  for (const dir of dirs) flushPath(dir, syncs);
}

/**
 * Written, and flushed, once a data directory has been flushed whole. Not `PG_VERSION`: PGlite's initdb copies
 * that in with the rest, so a process killed between the copy and the flush would leave a directory the next
 * start takes for an old one, its files never flushed.
 */
const FLUSHED = '.oncehook-flushed';

export function flushedWhole(dataDir: string): boolean {
  return existsSync(join(dataDir, FLUSHED));
}

/** Records that everything in `dataDir` is on disk: call only once it is. */
export function markFlushed(dataDir: string, syncs: DiskSyncs): void {
  const marker = join(dataDir, FLUSHED);
  writeFileSync(marker, '');
  flushPath(marker, syncs);
  flushPath(dataDir, syncs);
}
