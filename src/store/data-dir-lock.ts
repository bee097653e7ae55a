import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** In the data directory: which process uses it. */
export const LOCK_FILE = 'oncehook.pid';

/** Another live process holds the data directory. */
export class DataDirInUseError extends Error {
  constructor(dataDir: string, pid: number) {
    super(
      `the embedded database in ${dataDir} is in use by process ${pid}: one process at a time may open it ` +
        '(two would each write it as their own, and corrupt it). Stop that process first; several instances ' +
        `share a PostgreSQL through DATABASE_URL instead. If no such process runs, remove ${join(dataDir, LOCK_FILE)}.`,
    );
    this.name = 'DataDirInUseError';
  }
}

interface Holder {
  pid: number;
  /** The process's start time as the kernel counts it (Linux), or null where that cannot be read. */
  started: string | null;
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
    return typeof parsed.pid === 'number' ? { pid: parsed.pid, started: typeof parsed.started === 'string' ? parsed.started : null } : null;
  } catch {
    return null;
  }
}

/**
 * Whether the holder still runs. Our own PID or our parent's in the file is a previous holder's: after a
 * restart in a new container, PIDs start over. A PID that runs with another start time was reused.
 */
function alive(holder: Holder): boolean {
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

/** Another process taking over the same stale lock may have removed it first. */
function removeIfThere(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/**
 * Takes the embedded data directory for this process, or throws DataDirInUseError naming the process that
 * has it. PGlite keeps no lock of its own, and two processes on one directory each run a whole PostgreSQL on
 * the same files. A lock left by a process that died (kill -9) is taken over. Answers the release, which
 * removes the file if it is still this process's.
 */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, LOCK_FILE);
  const mine = JSON.stringify({ pid: process.pid, started: startTime(process.pid) } satisfies Holder);
  // Written whole first, then linked into place (which fails if the lock exists): no process ever reads a
  // lock file that is only half there.
  const own = `${path}.${process.pid}`;
  for (let attempt = 0; attempt < 5; attempt++) {
    writeFileSync(own, mine);
    try {
      linkSync(own, path);
      return () => {
        if (readOrNull(path) === mine) unlinkSync(path);
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      unlinkSync(own);
    }
    const text = readOrNull(path);
    if (text === null) continue;
    const holder = holderOf(text);
    if (holder && alive(holder)) throw new DataDirInUseError(dataDir, holder.pid);
    // Stale. Removed only if it is still the file just read: a process that took it over meanwhile keeps it,
    // and this one finds that process alive on the next turn.
    if (readOrNull(path) === text) removeIfThere(path);
  }
  throw new Error(`could not take ${path}: other processes kept replacing it`);
}
