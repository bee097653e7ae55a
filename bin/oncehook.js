#!/usr/bin/env node
// Runs the compiled build (dist/) when it is current: always in an installed package, which ships only the build,
// and in a checkout after `npm run build` until a source changes. Otherwise, in development, the TypeScript
// sources through tsx, with the checkout's own tsconfig.json wherever the command is started from (tsx would
// read the working directory's, and the dashboard's JSX settings with it). ONCEHOOK_FROM_SOURCES=1 runs the sources
// even beside a current build.
import { fileURLToPath } from 'node:url';
import { buildIsCurrent } from './build-stamp.js';

const root = fileURLToPath(new URL('..', import.meta.url));

async function registerTsx() {
  try {
    const { register } = await import('tsx/esm/api');
    register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) });
    return true;
  } catch {
    return false;
  }
}

if (process.env.ONCEHOOK_FROM_SOURCES !== '1' && buildIsCurrent(root)) {
  await import('../dist/src/cli/main.js');
} else if (await registerTsx()) {
  await import('../src/cli/main.ts');
} else {
  console.error('oncehook: no current build in dist/ and no tsx to run the sources — run `npm run build` (or `npm ci` for the development tools)');
  process.exit(1);
}
