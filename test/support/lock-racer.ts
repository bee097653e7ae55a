/**
 * A process racing others for data directories, round after round (test/unit/store/data-dir-lock.test.ts
 * starts several). It prints `ready`; then for each line `<dir> <start>` on stdin it sleeps until `start`
 * (ms since the epoch, the same for every racer), calls lockDataDir on `dir` and prints `took`, `refused` or
 * `failed: <message>`. What it took it holds until the next line, so that every other racer of the round
 * finds it alive.
 */
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { createInterface } from 'node:readline';
import { DataDirInUseError, lockDataDir } from '../../src/store/data-dir-lock.ts';

const sleeper = new Int32Array(new SharedArrayBuffer(4));
const sleep = (ms: number) => Atomics.wait(sleeper, 0, 0, Math.max(0, ms));

// Between two of a racer's file system calls there are a few microseconds, and racers land in such a window
// only when the scheduler sets one aside there: about one round in seventy on two cores. Every synchronous
// call here first sleeps up to JITTER_MS, as a process set aside does, so that a window a lock leaves open
// shows in a few rounds (about one in ten). It changes when calls happen, never what they do.
const JITTER_MS = 1;
const calls = fs as unknown as Record<string, unknown>;
for (const name of Object.keys(calls).filter((key) => key.endsWith('Sync'))) {
  const call = calls[name] as (...args: unknown[]) => unknown;
  calls[name] = (...args: unknown[]) => {
    sleep(Math.random() * JITTER_MS);
    return call(...args);
  };
}
syncBuiltinESMExports();

let release: (() => void) | null = null;
console.log('ready');
for await (const line of createInterface({ input: process.stdin })) {
  release?.();
  release = null;
  const [dir = '', start = ''] = line.split(' ');
  sleep(Number(start) - Date.now());
  try {
    release = lockDataDir(dir);
    console.log('took');
  } catch (error) {
    console.log(error instanceof DataDirInUseError ? 'refused' : `failed: ${String(error)}`);
  }
}
