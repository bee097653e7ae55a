import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { assertDriverRepaired } from '../../../src/store/driver-repairs.ts';
import { REPO } from '../../support/process.ts';

type Repairs = typeof import('../../../scripts/patch-postgres.mjs');

// The repair script on a copy of the driver as npm delivers it, made by undoing the checkout's repairs, last
// first: a copy of the script beside a node_modules of its own resolves that copy, and nothing of the checkout.
describe('scripts/patch-postgres.mjs', () => {
  let root: string;
  let script: string;
  let repairs: Repairs;
  const builds = ['src/connection.js', 'cjs/src/connection.js'];
  const driver = (build: string) => join(root, 'node_modules/postgres', build);
  const repaired = (build: string) => readFileSync(join(REPO, 'node_modules/postgres', build), 'utf8');

  beforeEach(async () => {
    root = mkdtempSync(join(tmpdir(), 'oncehook-repairs-'));
    mkdirSync(join(root, 'scripts'));
    script = join(root, 'scripts/patch-postgres.mjs');
    cpSync(join(REPO, 'scripts/patch-postgres.mjs'), script);
    cpSync(join(REPO, 'node_modules/postgres'), join(root, 'node_modules/postgres'), { recursive: true });
    repairs = (await import(`${pathToFileURL(script).href}?${root}`)) as Repairs;
    for (const build of builds) {
      let code = readFileSync(driver(build), 'utf8');
      for (const { edits } of [...repairs.repairs].reverse()) for (const [before, after] of [...edits].reverse()) code = code.replace(after, before);
      writeFileSync(driver(build), code);
    }
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const run = () => spawnSync(process.execPath, [script], { encoding: 'utf8' });

  it('finds every repair missing from a driver as npm delivers it, and applies them all', () => {
    expect(repairs.missingRepairs()).toEqual(repairs.repairs.map((r) => r.name));
    expect(run().status).toBe(0);
    expect(repairs.missingRepairs()).toEqual([]);
    for (const build of builds) expect(readFileSync(driver(build), 'utf8')).toBe(repaired(build));
  });

  // npx installs the checkout again and runs its postinstall on the repaired driver: that second run failed.
  it('leaves a repaired driver alone and succeeds, however often it runs', () => {
    expect(run().status).toBe(0);
    for (let i = 0; i < 2; i++) {
      const again = run();
      expect(again.status, again.stderr).toBe(0);
      for (const build of builds) expect(readFileSync(driver(build), 'utf8')).toBe(repaired(build));
    }
  });

  it('refuses, naming the repair, a driver whose code has moved on', () => {
    const [before] = repairs.repairs[1]!.edits[0]!;
    writeFileSync(driver('src/connection.js'), readFileSync(driver('src/connection.js'), 'utf8').replace(before, '/* rewritten upstream */'));
    const refused = run();
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(`no longer has the code the "${repairs.repairs[1]!.name}" repair changes`);
  });

  it('finds nothing missing in the checkout the tests run from', async () => {
    await expect(assertDriverRepaired()).resolves.toBeUndefined();
  });
});
