import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildIsCurrent, sourcesHash, STAMP } from '../../../bin/build-stamp.js';

// Which code the launcher runs: the build while it matches the sources, the sources once one has changed.
describe('the build stamp', () => {
  let root: string;
  const write = (path: string, text: string) => {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  const build = () => {
    write('dist/src/cli/main.js', '');
    write(STAMP, JSON.stringify({ sources: sourcesHash(root) }));
  };

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'oncehook-stamp-'));
    write('src/cli/main.ts', 'export {};');
    write('adapters/index.ts', 'export {};');
    write('package.json', '{}');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('is not current without a build', () => {
    expect(buildIsCurrent(root)).toBe(false);
  });

  it('is current once built, until a source changes, a source is added, or package.json changes', () => {
    build();
    expect(buildIsCurrent(root)).toBe(true);
    const later = new Date(Date.now() + 5_000);
    utimesSync(join(root, 'src/cli/main.ts'), later, later);
    expect(buildIsCurrent(root)).toBe(false);
    build();
    write('adapters/new-sender.ts', 'export {};');
    expect(buildIsCurrent(root)).toBe(false);
    build();
    write('package.json', '{"version": "2"}');
    expect(buildIsCurrent(root)).toBe(false);
  });

  it('is current in an installed package, which ships the build and no sources', () => {
    build();
    rmSync(join(root, 'src'), { recursive: true });
    write(STAMP, JSON.stringify({ sources: 'from the machine that packed it' }));
    expect(buildIsCurrent(root)).toBe(true);
  });

  it('is not current with a stamp it cannot read', () => {
    build();
    write(STAMP, 'not json');
    expect(buildIsCurrent(root)).toBe(false);
  });
});
