#!/usr/bin/env node
// Runs the TypeScript sources through tsx where it is installed (a checkout after `npm ci`), and the
// compiled output otherwise (a production install with `npm ci --omit=dev` after `npm run build`).
let useSources = true;
try {
  const { register } = await import('tsx/esm/api');
  register();
} catch {
  useSources = false;
}
await import(useSources ? '../src/cli/main.ts' : '../dist/src/cli/main.js');
