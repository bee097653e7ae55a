import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildInto } from './build.ts';
import { BUILT_CHECKOUT_ENV } from './process.ts';

/**
 * The global setup of the projects that start `oncehook` as a process (unit's CLI tests, e2e): the sources
 * compiled once for the whole run, so each process starts from JavaScript (~0.2 s to an admin command's answer,
 * ~0.9 s to listening) rather than compiling the TypeScript again through tsx (~0.9 s, ~1.7 s). The workers
 * inherit the environment set here. Both projects name this file; the second finds the build the first made.
 * `npm start`'s own launcher keeps tests of its own (newcomer, embedded-memory).
 */
export async function setup(): Promise<(() => void) | undefined> {
  if (process.env[BUILT_CHECKOUT_ENV]) return undefined;
  const root = mkdtempSync(join(tmpdir(), 'oncehook-e2e-build-'));
  try {
    await buildInto(join(root, 'build'));
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
  process.env[BUILT_CHECKOUT_ENV] = join(root, 'build');
  return () => {
    rmSync(root, { recursive: true, force: true });
    delete process.env[BUILT_CHECKOUT_ENV];
  };
}
