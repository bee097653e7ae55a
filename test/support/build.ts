import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from './process.ts';

/** The files the build and `npm pack` read; the Dockerfile's build stage copies the same. */
const BUILD_INPUTS = [
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'bundle.config.ts',
  'src',
  'adapters',
  'scripts',
  'bin',
  'oncehook.config.json',
  'oncehook.schema.json',
  'README.md',
];

/** Runs npm in `cwd`; rejects with everything it printed when it fails. */
export function npm(args: string[], cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], shell: process.platform === 'win32' });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`npm ${args.join(' ')} in ${cwd} exited with ${code}:\n${output}`)),
    );
  });
}

/**
 * The build of this checkout's sources in `dir` (made here), leaving the checkout untouched: the compiled CLI is
 * then `dir/dist/src/cli/main.js`. `npm run bundle` is `npm run build` without its type check, which `npm run
 * typecheck` makes of the same sources and more (CI runs it before the tests): ~8 s of CPU less at the run's
 * start, where every test waits for it. The checkout's dev dependencies (TypeScript, @types/node) are what a
 * build needs; linking them saves a second install, and the build finds its runtime dependencies through them too.
 */
export async function buildInto(dir: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  for (const entry of BUILD_INPUTS) cpSync(join(REPO, entry), join(dir, entry), { recursive: true });
  symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'), 'junction');
  await npm(['run', 'bundle'], dir);
}
