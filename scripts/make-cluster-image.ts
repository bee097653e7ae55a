/**
 * Makes the cluster image a new embedded data directory starts from (src/store/cluster-image.ts), with the
 * PGlite installed now. Run it after upgrading PGlite, and commit both files it writes:
 *
 *   npm run cluster-image
 *
 * The cluster is PGlite's initdb output, started once and shut down cleanly, so that no start from it replays
 * the log. The archive holds no times and no owners: one cluster makes one archive. Brotli at its best takes
 * ~30 s here and makes ~1.2 MB of the ~40 MB (a 16 MB log segment, three template databases).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, constants } from 'node:zlib';
import { PGlite } from '@electric-sql/pglite';
import { installedPglite, SHIPPED_IMAGE, type ImageManifest } from '../src/store/cluster-image.ts';
import { writeTar, type TarEntry } from '../src/store/tar.ts';

/** The directory's entries under `prefix`, sorted, each directory before what it holds. */
function entriesOf(root: string, prefix = ''): TarEntry[] {
  const entries: TarEntry[] = [];
  for (const entry of readdirSync(join(root, prefix), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const name = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) entries.push({ name, data: null }, ...entriesOf(root, name));
    else if (entry.isFile()) entries.push({ name, data: readFileSync(join(root, name)) });
    else throw new Error(`${name}: neither a file nor a directory`);
  }
  return entries;
}

const dir = mkdtempSync(join(tmpdir(), 'oncehook-cluster-image-'));
try {
  const cluster = join(dir, 'cluster');
  const pg = await PGlite.create({ dataDir: cluster });
  const [control] = (await pg.query<{ catalog_version_no: number }>('select catalog_version_no from pg_control_system()')).rows;
  await pg.close();
  const tar = writeTar(entriesOf(cluster));
  const archive = brotliCompressSync(tar, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
      [constants.BROTLI_PARAM_LGWIN]: constants.BROTLI_MAX_WINDOW_BITS,
      [constants.BROTLI_PARAM_SIZE_HINT]: tar.length,
    },
  });
  const manifest: ImageManifest = {
    pglite: installedPglite(),
    postgres: readFileSync(join(cluster, 'PG_VERSION'), 'utf8').trim(),
    catalogVersion: control!.catalog_version_no,
  };
  writeFileSync(SHIPPED_IMAGE.archive, archive);
  writeFileSync(SHIPPED_IMAGE.manifest, `${JSON.stringify(manifest, null, 2)}\n`);
  console.log(`${SHIPPED_IMAGE.archive}: ${(archive.length / 1e6).toFixed(2)} MB (${(tar.length / 1e6).toFixed(1)} MB unpacked)`);
  console.log(`${SHIPPED_IMAGE.manifest}: ${JSON.stringify(manifest)}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
