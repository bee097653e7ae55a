import { PGlite } from '@electric-sql/pglite';
import { NodeFS } from '@electric-sql/pglite/nodefs';
import { MIGRATED_IMAGE, seedDataDir, type ClusterImage, type Seeded } from './cluster-image.ts';
import { compiledPglite } from './pglite-artifacts.ts';
import { compileWasmLightly, MEMORY_START_PARAMS } from './pglite-memory.ts';
import { flushAll, flushedWhole, flushFd, markFlushed, type DiskSyncs } from './data-dir-flush.ts';

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

/** PGlite's own start parameters, with fsync on, the log flushed by fsync, and buffers kept small (pglite-memory.ts). */
const DURABLE_START = [...PGlite.defaultStartParams.filter((param) => param !== '-F'), '-c', 'fsync=on', '-c', 'wal_sync_method=fsync', ...MEMORY_START_PARAMS];

/** An embedded PostgreSQL in `dataDir` whose commits are on disk when they return; a new directory starts from `image`. */
export async function openDurablePglite(
  dataDir: string,
  image: ClusterImage = MIGRATED_IMAGE,
): Promise<{ client: PGlite; syncs: DiskSyncs; seeded: Seeded }> {
  const syncs: DiskSyncs = { count: 0, seconds: 0, fileSystems: 0 };
  compileWasmLightly();
  // Compiled while the cluster image is written: PGlite would compile only once the directory is ready (~100 ms of a
  // first start). Settled here too when the seed fails first, so its failure is not also an unhandled rejection.
  const compiled = compiledPglite();
  compiled.catch(() => {});
  const seeded = await seedDataDir(dataDir, syncs, image);
  const client = await PGlite.create({ fs: new DurableNodeFS(dataDir, syncs), startParams: DURABLE_START, pgliteWasmModule: await compiled });
  // A directory PGlite's initdb wrote is copied in file by file with no flush: flushed once, before anything is
  // stored in it. So is one such a copy left unflushed when its process was killed.
  if (!flushedWhole(dataDir)) {
    await flushAll(dataDir, syncs);
    markFlushed(dataDir, syncs);
  }
  return { client, syncs, seeded };
}
