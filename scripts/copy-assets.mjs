// Part of `npm run build`, after the bundle. The bundle holds only JavaScript, but its modules read files where they
// would be beside them unbundled, under dist/src/store (bundle.config.ts): drizzle-kit's SQL and the database
// functions (migrate.js, functions.js), the cluster image a new embedded data directory starts from
// (cluster-image.js), and the postgres.js repairs that a start on PostgreSQL checks (driver-repairs.js). Then the
// stamp that tells the launcher this build matches the sources. Plain Node rather than `cp -r`: it works on Windows
// and needs no dev dependency. Each destination is replaced, not merged, so a file deleted from src cannot linger in
// dist.
import { cpSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sourcesHash, STAMP } from '../bin/build-stamp.js';

const root = fileURLToPath(new URL('..', import.meta.url));
for (const path of ['src/store/migrations', 'src/store/functions', 'src/store/cluster-image', 'scripts/patch-postgres.mjs']) {
  const from = fileURLToPath(new URL(`../${path}`, import.meta.url));
  const to = fileURLToPath(new URL(`../dist/${path}`, import.meta.url));
  rmSync(to, { recursive: true, force: true });
  cpSync(from, to, { recursive: true });
}
writeFileSync(new URL(`../${STAMP}`, import.meta.url), `${JSON.stringify({ sources: sourcesHash(root) })}\n`);
