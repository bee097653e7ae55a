import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

const LOCK_MODULE = new URL('../../../src/store/data-dir-lock.ts', import.meta.url).href;

/** A process that waits for the go, then takes the lock and holds it until the others have tried. */
const RACER = `
const { existsSync } = require('node:fs');
(async () => {
  const { lockDataDir } = await import(process.env.LOCK_MODULE);
  console.log('ready');
  while (!existsSync(process.env.LOCK_GO)) await new Promise((resolve) => setTimeout(resolve, 1));
  try {
    lockDataDir(process.env.LOCK_DIR);
    console.log('took');
    await new Promise((resolve) => setTimeout(resolve, 1500));
  } catch (error) {
    console.log(error.name === 'DataDirInUseError' ? 'refused' : 'failed: ' + error.message);
  }
})();
`;

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

  it('lets exactly one of several processes racing for it have it, with no lock there or a stale one', async () => {
    const dead = otherProcess();
    await new Promise((resolve) => dead.once('exit', resolve).kill('SIGKILL'));
    for (const start of ['none', 'stale']) {
      const dir = dataDir();
      if (start === 'stale') holdBy(dir, { pid: dead.pid, started: null });
      const go = join(dir, '..', `go-${start}`);
      const racers = Array.from({ length: 6 }, () => {
        const child = spawn(process.execPath, ['--import', 'tsx', '-e', RACER], {
          env: { ...process.env, LOCK_MODULE: LOCK_MODULE, LOCK_DIR: dir, LOCK_GO: go },
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        children.push(child);
        let out = '';
        child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
        return { ready: waitFor(() => out.includes('ready'), 20_000), result: new Promise<string>((resolve) => child.once('exit', () => resolve(out))) };
      });
      await Promise.all(racers.map((r) => r.ready));
      writeFileSync(go, '');
      const results = await Promise.all(racers.map((r) => r.result));
      expect(results.filter((out) => out.includes('took')), results.join(' | ')).toHaveLength(1);
      expect(results.filter((out) => out.includes('refused')), results.join(' | ')).toHaveLength(5);
    }
  }, 30_000);

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
