import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * One hash of every file and directory under `dir`: their paths, and each file's bytes. Equal hashes, same tree.
 * Names in `leaving` are left out, wherever they are; with `files`, only the files whose names it matches count.
 */
export function treeHash(dir: string, leaving: readonly string[] = [], files?: RegExp): string {
  const hash = createHash('sha256');
  const walk = (path: string, relative: string) => {
    for (const entry of readdirSync(path, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (leaving.includes(entry.name) || (files !== undefined && !entry.isDirectory() && !files.test(entry.name))) continue;
      const name = `${relative}/${entry.name}`;
      hash.update(`${entry.isDirectory() ? 'd' : 'f'} ${name}\0`);
      if (entry.isDirectory()) walk(join(path, entry.name), name);
      else hash.update(readFileSync(join(path, entry.name)));
    }
  };
  walk(dir, '');
  return hash.digest('hex');
}
