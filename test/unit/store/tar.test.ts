import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { extractTar, writeTar, type TarEntry } from '../../../src/store/tar.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'oncehook-tar-'));
  dirs.push(dir);
  return dir;
}

/** The archive as a stream of chunks of `size` bytes: headers and data split anywhere. */
async function* chunked(archive: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let at = 0; at < archive.length; at += size) yield archive.subarray(at, at + size);
}

const bytes = (text: string) => new TextEncoder().encode(text);
const long = `${'d'.repeat(90)}/${'e'.repeat(50)}/${'f'.repeat(60)}`;
const ENTRIES: TarEntry[] = [
  { name: 'PG_VERSION', data: bytes('18\n') },
  { name: 'base', data: null },
  { name: 'base/1', data: null },
  { name: 'base/1/1259', data: new Uint8Array(8192 * 3 + 17).map((_, i) => i % 251) },
  { name: 'empty', data: new Uint8Array(0) },
  { name: 'd'.repeat(90), data: null },
  { name: `${'d'.repeat(90)}/${'e'.repeat(50)}`, data: null },
  { name: long, data: bytes('past the 100 bytes of a name') },
];

function expectExtracted(dir: string): void {
  for (const entry of ENTRIES) {
    const path = join(dir, entry.name);
    if (entry.data === null) expect(statSync(path).isDirectory(), entry.name).toBe(true);
    else expect(new Uint8Array(readFileSync(path)), entry.name).toEqual(entry.data);
  }
}

describe('the cluster image archive', () => {
  it.each([1, 7, 512, 513, 65_536])('extracts what was written, read in chunks of %i bytes', async (size) => {
    const dir = join(scratch(), 'into');
    await extractTar(chunked(writeTar(ENTRIES), size), dir);
    expectExtracted(dir);
    expect(statSync(join(dir, 'PG_VERSION')).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'base')).mode & 0o777).toBe(0o700);
  });

  it('writes archives another tar reads', () => {
    const dir = scratch();
    writeFileSync(join(dir, 'image.tar'), writeTar(ENTRIES));
    mkdirSync(join(dir, 'out'));
    execFileSync('tar', ['-xf', join(dir, 'image.tar'), '-C', join(dir, 'out')]);
    expectExtracted(join(dir, 'out'));
  });

  it('reads archives another tar writes', async () => {
    const dir = scratch();
    mkdirSync(join(dir, 'in/base/1'), { recursive: true });
    writeFileSync(join(dir, 'in/PG_VERSION'), '18\n');
    writeFileSync(join(dir, 'in/base/1/1259'), Buffer.alloc(10_000, 7));
    const archive = execFileSync('tar', ['--format=ustar', '-cf', '-', '-C', join(dir, 'in'), '.']);
    await extractTar(chunked(archive, 4096), join(dir, 'out'));
    expect(readFileSync(join(dir, 'out/PG_VERSION'), 'utf8')).toBe('18\n');
    expect(readFileSync(join(dir, 'out/base/1/1259'))).toEqual(Buffer.alloc(10_000, 7));
  });

  it('refuses an archive cut short', async () => {
    const archive = writeTar(ENTRIES);
    await expect(extractTar(chunked(archive.subarray(0, 2048), 512), join(scratch(), 'into'))).rejects.toThrow(/cut short/);
    await expect(extractTar(chunked(archive.subarray(0, archive.length - 1024), 512), join(scratch(), 'into'))).rejects.toThrow(/cut short/);
  });

  it('refuses a damaged header', async () => {
    const archive = writeTar(ENTRIES);
    archive[3] = archive[3]! ^ 0xff;
    await expect(extractTar(chunked(archive, 512), join(scratch(), 'into'))).rejects.toThrow(/checksum/);
  });

  it.each(['../escaped', '/tmp/absolute', 'base/../../escaped'])('refuses to write outside the directory: %s', async (name) => {
    const root = scratch();
    await expect(extractTar(chunked(writeTar([{ name, data: bytes('x') }]), 512), join(root, 'into'))).rejects.toThrow(/outside/);
    expect(existsSync(join(root, 'escaped'))).toBe(false);
    expect(readdirSync(join(root, 'into'))).toEqual([]);
  });

  it('refuses a link, which the image never holds', async () => {
    const dir = scratch();
    symlinkSync('/etc/passwd', join(dir, 'link'));
    const archive = execFileSync('tar', ['--format=ustar', '-cf', '-', '-C', dir, 'link']);
    await expect(extractTar(chunked(archive, 512), join(dir, 'into'))).rejects.toThrow(/only directories and regular files/);
  });
});
