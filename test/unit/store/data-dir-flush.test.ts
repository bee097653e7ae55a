import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fileSystemFlushReports, flushAll, flushes, flushTree } from '../../../src/store/data-dir-flush.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function filesIn(count: number): { dir: string; files: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'oncehook-flush-'));
  dirs.push(dir);
  mkdirSync(join(dir, 'sub'));
  const files = Array.from({ length: count }, (_, i) => join(dir, i % 2 ? 'sub' : '', `f${i}`));
  for (const file of files) writeFileSync(file, 'x');
  return { dir, files };
}

describe('flushing a data directory', () => {
  it('flushes every file handed over, also those handed over after the flushers ran out of work', async () => {
    const { files } = filesIn(30);
    const syncs = { count: 0, seconds: 0, fileSystems: 0 };
    const pending = flushes(syncs, 4);
    for (const file of files.slice(0, 10)) pending.add(file);
    await new Promise((resolve) => setTimeout(resolve, 50));
    for (const file of files.slice(10)) {
      pending.add(file);
      await Promise.resolve();
    }
    await pending.done();
    expect(syncs.count).toBe(30);
  });

  it('fails when a file cannot be flushed, after the others are', async () => {
    const { dir, files } = filesIn(5);
    const syncs = { count: 0, seconds: 0, fileSystems: 0 };
    const pending = flushes(syncs, 2);
    pending.add(join(dir, 'missing'));
    for (const file of files) pending.add(file);
    await expect(pending.done()).rejects.toMatchObject({ code: 'ENOENT' });
    expect(syncs.count).toBe(5);
  });

  it('flushes a tree: its files, then its directories', async () => {
    const { dir } = filesIn(7);
    const syncs = { count: 0, seconds: 0, fileSystems: 0 };
    await flushTree(dir, syncs);
    expect(syncs.count).toBe(7 + 2);
  });

  it('flushes everything under a directory in one flush of its file system where Linux reports its failures', async () => {
    const { dir } = filesIn(7);
    const syncs = { count: 0, seconds: 0, fileSystems: 0 };
    await flushAll(dir, syncs);
    if (fileSystemFlushReports()) expect(syncs).toMatchObject({ count: 1, fileSystems: 1 });
    else expect(syncs).toMatchObject({ count: 7 + 2, fileSystems: 0 });
  });

  it('flushes file by file where the sync command is missing', async () => {
    const { dir } = filesIn(7);
    const syncs = { count: 0, seconds: 0, fileSystems: 0 };
    const path = process.env.PATH;
    process.env.PATH = dir;
    try {
      await flushAll(dir, syncs);
    } finally {
      process.env.PATH = path;
    }
    expect(syncs).toMatchObject({ count: 7 + 2, fileSystems: 0 });
  });

  it.runIf(fileSystemFlushReports())('fails when the file system cannot be flushed', async () => {
    await expect(flushAll(join(tmpdir(), 'oncehook-flush-no-such-dir'), { count: 0, seconds: 0, fileSystems: 0 })).rejects.toThrow(/flushing .* to disk failed/);
  });
});
