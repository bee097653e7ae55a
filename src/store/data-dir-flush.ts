import { execFile } from 'node:child_process';
import { closeSync, existsSync, fsyncSync, openSync, readdirSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { release } from 'node:os';
import { join } from 'node:path';

/** How often, and for how long, the embedded database waited for the disk. */
export interface DiskSyncs {
  count: number;
  seconds: number;
  /** Of them, flushes of a whole file system that stood for a flush per file (flushAll). */
  fileSystems: number;
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

/** The files under `path`. */
function filesUnder(path: string, files: string[] = []): string[] {
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    if (entry.isDirectory()) filesUnder(join(path, entry.name), files);
    else if (entry.isFile()) files.push(join(path, entry.name));
  }
  return files;
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

/** Files flushed in the background as they are handed over; `done` waits for them all, and throws if one failed. */
export interface Flushes {
  add(path: string): void;
  done(): Promise<void>;
}

/**
 * Flushes files several at a time: the file system commits flushes that wait together at once (a new cluster's
 * 971 files: 1.25 s one by one, 0.43–0.48 s eight at a time). Handed each file as it is written, they overlap
 * the writing too.
 */
export function flushes(syncs: DiskSyncs, width = 8): Flushes {
  const waiting: string[] = [];
  const flushers = new Set<Promise<void>>();
  let failure: { error: unknown } | null = null;
  // Counted down in the same turn a flusher finds nothing waiting, so a path added after it is never left alone.
  let active = 0;
  const flusher = async () => {
    try {
      for (let path = waiting.shift(); path !== undefined; path = waiting.shift()) {
        await flushFile(path, syncs).catch((error: unknown) => (failure ??= { error }));
      }
    } finally {
      active--;
    }
  };
  return {
    add(path) {
      waiting.push(path);
      if (active >= width) return;
      active++;
      const running = flusher().finally(() => flushers.delete(running));
      flushers.add(running);
    },
    async done() {
      while (flushers.size > 0) await Promise.all(flushers);
      if (failure) throw failure.error;
    },
  };
}

/** Flushes `path` and every directory under it, each after the directories it holds. */
export function flushDirs(path: string, syncs: DiskSyncs): void {
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    if (entry.isDirectory()) flushDirs(join(path, entry.name), syncs);
  }
  flushPath(path, syncs);
}

/** Flushes every file and directory under `path`, the directories after the files. */
export async function flushTree(path: string, syncs: DiskSyncs): Promise<void> {
  const pending = flushes(syncs);
  for (const file of filesUnder(path)) pending.add(file);
  await pending.done();
  flushDirs(path, syncs);
}

/**
 * Whether `sync -f` (syncfs(2)) may stand for a flush per file. Linux reports a failed write back to syncfs's caller
 * only from 5.8 on; before, a flush that failed would pass unseen.
 */
export function fileSystemFlushReports(): boolean {
  if (process.platform !== 'linux') return false;
  const [major = 0, minor = 0] = release().split('.').map(Number);
  return major > 5 || (major === 5 && minor >= 8);
}

/**
 * Everything written under `path` on disk: on Linux, one flush of its whole file system (`sync -f`, syncfs(2)); a new
 * cluster's 1,053 files in ~50 ms, where flushes per file, eight at a time, took 150–300 ms besides the writing
 * (measured on the development machine, ext4). Elsewhere, or where `sync` is missing, every file and directory in turn.
 */
export async function flushAll(path: string, syncs: DiskSyncs): Promise<void> {
  if (fileSystemFlushReports()) {
    const started = performance.now();
    const missing = await new Promise<boolean>((resolve, reject) =>
      execFile('sync', ['-f', path], (error) => {
        if (!error) return resolve(false);
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return resolve(true);
        reject(new Error(`flushing ${path} to disk failed: ${error.message.trim()}`));
      }),
    );
    if (!missing) {
      syncs.count++;
      syncs.fileSystems++;
      syncs.seconds += (performance.now() - started) / 1000;
      return;
    }
  }
  await flushTree(path, syncs);
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
