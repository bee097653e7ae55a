// Part of `npm run build`. tsc emits only JavaScript, but dist/src/store reads files beside it: drizzle-kit's
// SQL (migrate.js) and the cluster image a new embedded data directory starts from (cluster-image.js).
// Plain Node rather than `cp -r`: it works on Windows and needs no dev dependency. Each destination is
// replaced, not merged, so a file deleted from src cannot linger in dist.
import { cpSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

for (const folder of ['src/store/migrations', 'src/store/cluster-image']) {
  const from = fileURLToPath(new URL(`../${folder}`, import.meta.url));
  const to = fileURLToPath(new URL(`../dist/${folder}`, import.meta.url));
  rmSync(to, { recursive: true, force: true });
  cpSync(from, to, { recursive: true });
}
