import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import bundle from '../../bundle.config.ts';

// An installed package has only package.json's `dependencies`: what the build leaves outside the bundle must be
// one of them, or the installed gateway fails at its first import; and a dependency the build bundles anyway is
// only download and disk for every install.
const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

describe("the package's dependencies", () => {
  it('are exactly the packages the build loads from node_modules', () => {
    const external = bundle.ssr?.external;
    expect(Array.isArray(external)).toBe(true);
    expect([...(external as string[])].sort()).toEqual(Object.keys(manifest.dependencies).sort());
  });

  it('leave no package both a dependency and a dev dependency', () => {
    expect(Object.keys(manifest.dependencies).filter((name) => name in manifest.devDependencies)).toEqual([]);
  });
});
