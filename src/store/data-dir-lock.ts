import { createHash, randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, readlinkSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';

/** In the data directory: which process uses it. */
export const LOCK_FILE = 'oncehook.pid';

/**
 * A holder in another PID namespace (another container on the same volume) cannot be asked whether it runs:
 * it touches the lock this often, and a lock untouched for STALE_MS is a dead holder's.
 */
export const HEARTBEAT_MS = 5_000;
export const STALE_MS = 20_000;

/** Another live process holds the data directory. */
export class DataDirInUseError extends Error {
  constructor(dataDir: string, holder: Holder, foreign: boolean) {
    super(
      `the embedded database in ${dataDir} is in use by process ${holder.pid}` +
        (foreign ? ` of another PID namespace (another container?), which still keeps its lock fresh` : '') +
        ': one process at a time may open it (two would each write it as their own, and corrupt it). Stop that ' +
        'process first; several instances share a PostgreSQL through DATABASE_URL instead. ' +
        (foreign
          ? `A lock its holder has not touched for ${STALE_MS / 1000} s is taken over.`
          : `If no such process runs, remove ${join(dataDir, LOCK_FILE)}.`),
    );
    this.name = 'DataDirInUseError';
  }
}

interface Holder {
  pid: number;
  /** The process's start time as the kernel counts it (Linux), or null where that cannot be read. */
  started: string | null;
  /** The holder's PID namespace (Linux, `/proc/self/ns/pid`), or null where that cannot be read. */
  ns: string | null;
}

/** This process's PID namespace: where a PID in the lock means what it means here. */
function pidNamespace(): string | null {
  try {
    return readlinkSync('/proc/self/ns/pid');
  } catch {
    return null;
  }
}

/**
 * Field 22 of `/proc/<pid>/stat`: a reused PID names a process that started at another time. The command name
 * (field 2) is in parentheses and may hold spaces, so fields are counted after its closing one.
 */
export function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function holderOf(text: string): Holder | null {
  try {
    const parsed = JSON.parse(text) as Partial<Holder>;
    if (typeof parsed.pid !== 'number') return null;
    const optional = (value: unknown) => (typeof value === 'string' ? value : null);
    return { pid: parsed.pid, started: optional(parsed.started), ns: optional(parsed.ns) };
  } catch {
    return null;
  }
}

/**
 * A holder this process cannot see: one of another PID namespace. A lock from before namespaces were
 * recorded (no `ns`) is read as this namespace's, as it was written.
 */
function foreign(holder: Holder, ours: string | null): boolean {
  return holder.ns !== null && holder.ns !== ours;
}

/**
 * Whether the holder still runs. Of another namespace: whether it touched the lock within STALE_MS. Of this
 * one: our own PID or our parent's in the file is a previous holder's (PIDs start over in a new container),
 * and a PID that runs with another start time was reused.
 */
function alive(holder: Holder, ours: string | null, path: string): boolean {
  if (foreign(holder, ours)) {
    try {
      return Date.now() - statSync(path).mtimeMs < STALE_MS;
    } catch {
      return false;
    }
  }
  if (holder.pid === process.pid || holder.pid === process.ppid) return false;
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  const now = startTime(holder.pid);
  return now === null || holder.started === null || now === holder.started;
}

function readOrNull(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/** The heartbeat: a file system error (the volume gone) is the database's to report, not the timer's. */
function touch(path: string): void {
  try {
    const now = new Date();
    utimesSync(path, now, now);
  } catch {
    // The next beat tries again.
  }
}

/** Links `own` as `target`, which fails, answering false, where `target` exists. */
function linked(own: string, target: string): boolean {
  try {
    linkSync(own, target);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return false;
  }
}

/** A holder judged dead that was only silent (another namespace's, 20 s) may have released its lock itself. */
function removeIfThere(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** A process taking the data directory: its lock text, already whole in a file of its own, and its namespace. */
interface Taker {
  dataDir: string;
  own: string;
  ours: string | null;
}

/**
 * The one name under which `text` in `file` may be removed. Named by the file's name, not its path: another
 * container may mount the volume elsewhere and must still meet this process here.
 */
function claimOf(taker: Taker, file: string, text: string): string {
  const digest = createHash('sha256').update(`${basename(file)}\n${text}`).digest('hex').slice(0, 20);
  return join(taker.dataDir, `${LOCK_FILE}.claim-${digest}`);
}

/**
 * Removes `file`, which held `text` when read, if that text's holder is dead; throws DataDirInUseError if it
 * lives. Reading the file again and unlinking it if unchanged is two steps: between them another taker can
 * remove the same stale lock and link its own, which the unlink then deletes, and two processes each hold the
 * directory. So a stale text is removed only by the holder of its claim, the taker's own file linked under a
 * name made from that text: a link fails where the name exists, so one process at a time has it. Under the
 * claim the taker reads `file` again:
 * - Still `text`: nothing removes it before this unlink. Its holder is dead and releases nothing, and only
 *   the claim's holder removes it. A text names its holder (PID, start time, namespace), so once removed it
 *   never returns: a taker that read it earlier and claims it later finds other text, or none, and leaves it.
 * - Other text or none: another taker was first; the caller tries again and finds its holder alive.
 * A taker killed holding a claim would block every later takeover, so a claim is judged as a lock is, by its
 * holder's life: a live claimant is refused as a live holder is (it is about to hold the directory), and a
 * dead one's claim is removed the same way, under a claim on the claim, where the same argument holds. A taker
 * killed after the unlink leaves its claim behind, harmless: the text it names is gone, and a late taker of
 * that text removes the claim as a dead one's.
 */
function takeOver(taker: Taker, file: string, text: string): void {
  const holder = holderOf(text);
  if (holder && alive(holder, taker.ours, file)) throw new DataDirInUseError(taker.dataDir, holder, foreign(holder, taker.ours));
  const claim = claimOf(taker, file, text);
  if (!linked(taker.own, claim)) {
    const claimant = readOrNull(claim);
    if (claimant !== null) takeOver(taker, claim, claimant);
    return;
  }
  try {
    if (readOrNull(file) === text) removeIfThere(file);
  } finally {
    unlinkSync(claim);
  }
}

/**
 * Takes the embedded data directory for this process, or throws DataDirInUseError naming the process that
 * has it. PGlite keeps no lock of its own, and two processes on one directory each run a whole PostgreSQL on
 * the same files. A lock left by a process that died (kill -9) is taken over: at once in this PID namespace,
 * after STALE_MS without a heartbeat from another. Answers the release, which stops the heartbeat and removes
 * the file if it is still this process's.
 */
export function lockDataDir(dataDir: string, heartbeatMs = HEARTBEAT_MS): () => void {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, LOCK_FILE);
  const ours = pidNamespace();
  const mine = JSON.stringify({ pid: process.pid, started: startTime(process.pid), ns: ours } satisfies Holder);
  // Written whole first, then linked into place (which fails if the lock exists): no process ever reads a
  // lock file that is only half there. Not named by the PID alone: another container's process may have this
  // PID, and writing its file would rewrite the lock or claim that file is linked as ('wx' never does).
  const taker: Taker = { dataDir, own: `${path}.${process.pid}.${randomBytes(4).toString('hex')}`, ours };
  writeFileSync(taker.own, mine, { flag: 'wx' });
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      if (linked(taker.own, path)) {
        const heartbeat = setInterval(() => touch(path), heartbeatMs).unref();
        return () => {
          clearInterval(heartbeat);
          if (readOrNull(path) === mine) unlinkSync(path);
        };
      }
      const text = readOrNull(path);
      if (text !== null) takeOver(taker, path, text);
    }
  } finally {
    unlinkSync(taker.own);
  }
  throw new Error(`could not take ${path}: other processes kept replacing it`);
}
