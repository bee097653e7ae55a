// Part of `npm run build`. tsc emits only JavaScript, but dist/src/store/migrate.js reads drizzle-kit's SQL
// from the folder beside it. Plain Node rather than `cp -r`: it works on Windows and needs no dev dependency.
// The destination is replaced, not merged, so a migration deleted from src cannot linger in dist.
import { cpSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const from = fileURLToPath(new URL('../src/store/migrations', import.meta.url));
const to = fileURLToPath(new URL('../dist/src/store/migrations', import.meta.url));

rmSync(to, { recursive: true, force: true });
cpSync(from, to, { recursive: true });
