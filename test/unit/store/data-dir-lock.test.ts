import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { DataDirInUseError, LOCK_FILE, lockDataDir, STALE_MS, startTime } from '../../../src/store/data-dir-lock.ts';
import { waitFor } from '../../support/forwarding.ts';

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'oncehook-lock-'));
  dirs.push(dir);
  return dir;
}

/** Another live process, standing for a gateway that holds a directory. */
function otherProcess(): ChildProcess {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
  children.push(child);
  return child;
}

/** A racer process (test/support/lock-racer.ts). */
function racer() {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('../../support/lock-racer.ts', import.meta.url))], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  children.push(child);
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async () => String((await lines.next()).value ?? 'exited');
  return {
    pid: child.pid,
    ready: next(),
    /** Races for `dir` at `start` (ms since the epoch): what the racer printed. */
    race(dir: string, start: number) {
      child.stdin!.write(`${dir} ${start}\n`);
      return next();
    },
  };
}

/**
 * A process taking over the stale lock in LOCK_DIR, stopped where it has claimed the lock and is about to
 * remove it: killed (STOP=die, as kill -9 might) or stalled there (STOP=stall, printing `claimed`).
 */
const STOPPED_TAKER = `
const fs = require('node:fs');
const unlink = fs.unlinkSync;
fs.unlinkSync = (path) => {
  if (path === require('node:path').join(process.env.LOCK_DIR, '${LOCK_FILE}')) {
    if (process.env.STOP === 'die') process.kill(process.pid, 'SIGKILL');
    console.log('claimed');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
  }
  return unlink(path);
};
require('node:module').syncBuiltinESMExports();
import(process.env.LOCK_MODULE).then(({ lockDataDir }) => lockDataDir(process.env.LOCK_DIR));
`;

function stoppedTaker(dir: string, stop: 'die' | 'stall'): ChildProcess {
  const env = { ...process.env, LOCK_MODULE: new URL('../../../src/store/data-dir-lock.ts', import.meta.url).href, LOCK_DIR: dir, STOP: stop };
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', STOPPED_TAKER], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return child;
}

const holdBy = (dir: string, holder: object) => writeFileSync(join(dir, LOCK_FILE), JSON.stringify(holder));
const lockedBy = (dir: string) => JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8')).pid as number;

describe('the embedded data directory lock', () => {
  it('is taken by one process and refused to the next while it runs, naming it', async () => {
    const dir = dataDir();
    const other = otherProcess();
    await new Promise((resolve) => other.once('spawn', resolve));
    holdBy(dir, { pid: other.pid, started: startTime(other.pid!) });
    expect(() => lockDataDir(dir)).toThrow(DataDirInUseError);
    expect(() => lockDataDir(dir)).toThrow(`in use by process ${other.pid}`);
    expect(lockedBy(dir)).toBe(other.pid);
  });

  it('takes over a lock whose process is gone, or whose PID now names another process or this one', async () => {
    const dead = otherProcess();
    await new Promise((resolve) => dead.once('exit', resolve).kill('SIGKILL'));
    const reused = otherProcess();
    await new Promise((resolve) => reused.once('spawn', resolve));
    const stale = [
      { pid: dead.pid, started: null },
      { pid: reused.pid, started: 'another start' },
      { pid: process.pid, started: null },
      'half written {',
    ];
    for (const holder of stale) {
      const dir = dataDir();
      if (typeof holder === 'string') writeFileSync(join(dir, LOCK_FILE), holder);
      else holdBy(dir, holder);
      const release = lockDataDir(dir);
      expect(lockedBy(dir)).toBe(process.pid);
      release();
      expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
    }
  });

  it('lets exactly one of several processes racing for it have it, with no lock there or a stale one, round after round', async () => {
    const dead = otherProcess();
    await new Promise((resolve) => dead.once('spawn', resolve));
    const deadStarted = startTime(dead.pid!);
    await new Promise((resolve) => dead.once('exit', resolve).kill('SIGKILL'));
    const starts: Record<string, (dir: string) => void> = {
      'no lock': () => {},
      "a dead process's lock": (dir) => holdBy(dir, { pid: dead.pid, started: deadStarted }),
      'a silent lock of another namespace': (dir) => {
        holdBy(dir, { pid: 1, started: null, ns: 'pid:[1]' });
        const olderThanStale = new Date(Date.now() - STALE_MS - 1000);
        utimesSync(join(dir, LOCK_FILE), olderThanStale, olderThanStale);
      },
    };
    const racers = Array.from({ length: 8 }, racer);
    await Promise.all(racers.map((r) => r.ready));
    const root = dataDir();
    const rounds = 90;
    const wrong: string[] = [];
    for (let round = 0; round < rounds; round++) {
      const [start, prepare] = Object.entries(starts)[round % 3]!;
      const dir = join(root, String(round));
      mkdirSync(dir);
      prepare(dir);
      const at = Date.now() + 20;
      const outcomes = await Promise.all(racers.map((r) => r.race(dir, at)));
      const took = racers.filter((_, i) => outcomes[i] === 'took');
      const refused = outcomes.filter((outcome) => outcome === 'refused');
      const left = readdirSync(dir);
      const holder = left.includes(LOCK_FILE) ? lockedBy(dir) : null;
      // The lock alone is left: whatever else a racer wrote, it removed.
      const one = took.length === 1 && refused.length === racers.length - 1 && holder === took[0]!.pid && left.length === 1;
      if (!one) wrong.push(`round ${round}, ${start}: ${outcomes.join(', ')}; left ${left.join(', ')}`);
    }
    expect(wrong, `${wrong.length} of ${rounds} rounds`).toEqual([]);
  }, 60_000);

  it('takes over past a taker killed mid-takeover, and is refused while a live one is taking over', async () => {
    const dead = otherProcess();
    await new Promise((resolve) => dead.once('exit', resolve).kill('SIGKILL'));
    const dir = dataDir();
    holdBy(dir, { pid: dead.pid, started: null });
    await new Promise((resolve) => stoppedTaker(dir, 'die').once('exit', resolve));
    expect(readdirSync(dir).some((name) => name.includes('claim'))).toBe(true);
    const release = lockDataDir(dir);
    expect(lockedBy(dir)).toBe(process.pid);
    release();

    holdBy(dir, { pid: dead.pid, started: null });
    const stalled = stoppedTaker(dir, 'stall');
    let out = '';
    stalled.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    await waitFor(() => out.includes('claimed'), 20_000);
    expect(() => lockDataDir(dir)).toThrow(`in use by process ${stalled.pid}`);
    expect(lockedBy(dir)).toBe(dead.pid);
  });

  it("is refused to a holder of another PID namespace (another container) while it keeps the lock fresh, even with this process's PID", () => {
    const dir = dataDir();
    const lock = join(dir, LOCK_FILE);
    holdBy(dir, { pid: process.pid, started: null, ns: 'pid:[1]' });
    expect(() => lockDataDir(dir)).toThrow(/in use by process \d+ of another PID namespace/);
    const olderThanStale = new Date(Date.now() - STALE_MS - 1000);
    utimesSync(lock, olderThanStale, olderThanStale);
    const release = lockDataDir(dir);
    expect(lockedBy(dir)).toBe(process.pid);
    release();
  });

  it('keeps its lock fresh while it holds it, for processes of other namespaces to see', async () => {
    const dir = dataDir();
    const lock = join(dir, LOCK_FILE);
    const release = lockDataDir(dir, 20);
    const old = new Date(Date.now() - 60_000);
    utimesSync(lock, old, old);
    await waitFor(() => Date.now() - statSync(lock).mtimeMs < 1000, 2000);
    release();
    expect(existsSync(lock)).toBe(false);
  });

  it("leaves alone another container's file of this process's PID", () => {
    // Two containers started together on one volume (docker compose --scale) may both run oncehook as PID 1.
    const dir = dataDir();
    const theirs = join(dir, `${LOCK_FILE}.${process.pid}`);
    writeFileSync(theirs, 'their lock text');
    const release = lockDataDir(dir);
    expect(readFileSync(theirs, 'utf8')).toBe('their lock text');
    release();
  });

  it('creates the directory, leaves nothing else in it, and releases only its own lock', () => {
    const dir = join(dataDir(), 'new');
    const release = lockDataDir(dir);
    expect(readdirSync(dir)).toEqual([LOCK_FILE]);
    expect(() => lockDataDir(dir)).not.toThrow(); // this process's own PID: a restart in a fresh PID namespace
    holdBy(dir, { pid: 1, started: 'someone else' });
    release();
    expect(lockedBy(dir)).toBe(1);
  });
});
