// Whether dist/ was built from the sources as they are now. `npm run build` writes the stamp (a hash of its
// inputs' names, sizes and modification times: reading their content, the cluster image among them, took ~80 ms
// of every start); the launcher compares it at every start of a checkout. An installed package holds no sources,
// so its build is current by definition.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/** What `npm run build` reads: a change to any of these makes the build out of date. */
const INPUTS = ['src', 'adapters', 'package.json', 'tsconfig.json', 'tsconfig.build.json', 'bundle.config.ts', 'scripts/patch-postgres.mjs'];
export const STAMP = 'dist/build-stamp.json';

function* files(path) {
  if (!existsSync(path)) return;
  if (!statSync(path).isDirectory()) return yield path;
  for (const entry of readdirSync(path).sort()) yield* files(join(path, entry));
}

/** A hash of every build input's path, size and modification time, under `root`. */
export function sourcesHash(root) {
  const hash = createHash('sha256');
  for (const input of INPUTS) {
    for (const file of files(join(root, input))) {
      const { size, mtimeMs } = statSync(file);
      hash.update(`${relative(root, file)}\0${size}\0${mtimeMs}\n`);
    }
  }
  return hash.digest('hex');
}

/** Whether `root`'s dist/ may run: built, and from the sources there are (if any). */
export function buildIsCurrent(root) {
  if (!existsSync(join(root, 'dist/src/cli/main.js'))) return false;
  if (!existsSync(join(root, 'src'))) return true;
  try {
    return JSON.parse(readFileSync(join(root, STAMP), 'utf8')).sources === sourcesHash(root);
  } catch {
    return false;
  }
}
