import { closeSync, existsSync, fsyncSync, openSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { NodeFS } from '@electric-sql/pglite/nodefs';

/** How often, and for how long, the embedded database waited for the disk. */
export interface DiskSyncs {
  count: number;
  seconds: number;
}

/** The error number the WebAssembly side reads as EIO. */
const WASI_EIO = 29;

interface EmscriptenStream {
  /** The host's file descriptor: set for regular files only. */
  nfd?: number;
}

interface NodeFsModule {
  NODEFS: { stream_ops: { fsync?: (stream: EmscriptenStream) => number } };
}

/**
 * PGlite as shipped neither asks for nor could get a flush to disk: it starts PostgreSQL with `-F` (fsync
 * off), and the Node filesystem it runs on answers fsync and fdatasync without calling the host. A commit
 * is then in the operating system's cache only — it survives the process being killed, not the machine
 * losing power or crashing. oncehook answers 200 only for what is durable, so its embedded database runs
 * PostgreSQL with fsync on and `wal_sync_method = fsync` (fdatasync has no hook to attach to), on a
 * filesystem whose fsync reaches the host's file. Each call blocks the process for the disk's flush: a few
 * hundred microseconds on an SSD, once per commit, as PostgreSQL's own would. No directory flush arrives
 * here (measured: none through log switches and checkpoints); a journaling filesystem such as ext4 commits
 * a new or renamed log segment's directory entry with the next flush of any file.
 */
class DurableNodeFS extends NodeFS {
  constructor(
    dataDir: string,
    private readonly syncs: DiskSyncs,
  ) {
    super(dataDir);
  }

  override async init(pg: PGlite, opts: Parameters<NodeFS['init']>[1]) {
    const { emscriptenOpts } = await super.init(pg, opts);
    const syncs = this.syncs;
    const attach = (mod: unknown) => {
      const { NODEFS } = mod as NodeFsModule;
      NODEFS.stream_ops.fsync = (stream) => {
        if (stream.nfd === undefined) return 0;
        try {
          flushFd(stream.nfd, syncs);
        } catch {
          // Answered as the errno it is, so PostgreSQL fails the commit (and stops) rather than report it done.
          return WASI_EIO;
        }
        return 0;
      };
    };
    return { emscriptenOpts: { ...emscriptenOpts, preRun: [...(emscriptenOpts.preRun ?? []), attach] } };
  }
}

/** One flush to disk, counted and timed. */
function flushFd(fd: number, syncs: DiskSyncs): void {
  const started = performance.now();
  fsyncSync(fd);
  syncs.count++;
  syncs.seconds += (performance.now() - started) / 1000;
}

/** PGlite's own start parameters, with fsync on and the log flushed by fsync. */
const DURABLE_START = [...PGlite.defaultStartParams.filter((param) => param !== '-F'), '-c', 'fsync=on', '-c', 'wal_sync_method=fsync'];

/** Flushes every file and directory under `path`, the directories after what they hold. */
function flushTree(path: string, syncs: DiskSyncs): void {
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    if (entry.isDirectory()) flushTree(join(path, entry.name), syncs);
    else if (entry.isFile()) flushPath(join(path, entry.name), syncs);
  }
  flushPath(path, syncs);
}

function flushPath(path: string, syncs: DiskSyncs): void {
  const fd = openSync(path, 'r');
  try {
    flushFd(fd, syncs);
  } finally {
    closeSync(fd);
  }
}

/**
 * Written, and flushed, once a directory has been flushed whole. Not `PG_VERSION`: PGlite's initdb copies that in
 * with the rest, so a process killed between the copy and the flush would leave a directory the next start
 * takes for an old one, its files never flushed.
 */
const FLUSHED = '.oncehook-flushed';

/** An embedded PostgreSQL in `dataDir` whose commits are on disk when they return. */
export async function openDurablePglite(dataDir: string): Promise<{ client: PGlite; syncs: DiskSyncs }> {
  const syncs: DiskSyncs = { count: 0, seconds: 0 };
  const client = await PGlite.create({ fs: new DurableNodeFS(dataDir, syncs), startParams: DURABLE_START });
  // A new directory is written by PGlite's initdb, copied in file by file with no flush: flush it once,
  // before anything is stored in it.
  const marker = join(dataDir, FLUSHED);
  if (!existsSync(marker)) {
    flushTree(dataDir, syncs);
    writeFileSync(marker, '');
    flushPath(marker, syncs);
    flushPath(dataDir, syncs);
  }
  return { client, syncs };
}
