import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildInto } from '../support/build.ts';
import { BUILT_CHECKOUT_ENV } from '../support/process.ts';

/**
 * The e2e project's global setup: the sources compiled once for the whole run, so its ~70 processes start from
 * JavaScript (~0.9 s to listening) rather than each compiling the TypeScript again through tsx (~1.7 s). The
 * workers inherit the environment set here; `npm start`'s own launcher keeps a test of its own (newcomer).
 */
export async function setup(): Promise<() => void> {
  const root = mkdtempSync(join(tmpdir(), 'oncehook-e2e-build-'));
  try {
    await buildInto(join(root, 'build'));
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
  process.env[BUILT_CHECKOUT_ENV] = join(root, 'build');
  return () => rmSync(root, { recursive: true, force: true });
}
