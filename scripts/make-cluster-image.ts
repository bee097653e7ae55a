/**
 * Makes the cluster images a new embedded data directory and a test's in-memory database start from
 * (src/store/cluster-image.ts). Run it after upgrading PGlite, adding a migration or raising a function's revision,
 * and commit the files it writes:
 *
 *   npm run cluster-image
 *
 * The initdb image is made again only when the installed PGlite is not the one that made it: PGlite's initdb output,
 * started once and shut down cleanly, so that no start from it replays the log. The migrated image is always made
 * anew, from the initdb image, migrated and shut down cleanly again. Each takes ~30 s to compress.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { INITDB_IMAGE, installedPglite, MIGRATED_IMAGE, readManifest, type ClusterImage, type ImageManifest } from '../src/store/cluster-image.ts';
import { extractImage, migrateCluster, writeImage } from './cluster-images.ts';

const dir = mkdtempSync(join(tmpdir(), 'oncehook-cluster-image-'));
const write = (from: string, image: ClusterImage, manifest: ImageManifest) => {
  const { bytes, unpacked } = writeImage(from, image, manifest);
  console.log(`${image.archive}: ${(bytes / 1e6).toFixed(2)} MB (${(unpacked / 1e6).toFixed(1)} MB unpacked); ${JSON.stringify(manifest)}`);
};
try {
  if (readManifest(INITDB_IMAGE).pglite !== installedPglite()) {
    const cluster = join(dir, 'initdb');
    const pg = await PGlite.create({ dataDir: cluster });
    const [control] = (await pg.query<{ catalog_version_no: number }>('select catalog_version_no from pg_control_system()')).rows;
    await pg.close();
    write(cluster, INITDB_IMAGE, {
      pglite: installedPglite(),
      postgres: readFileSync(join(cluster, 'PG_VERSION'), 'utf8').trim(),
      catalogVersion: control!.catalog_version_no,
    });
  }
  const migrated = join(dir, 'migrated');
  await extractImage(INITDB_IMAGE, migrated);
  const { total } = await migrateCluster(migrated);
  write(migrated, MIGRATED_IMAGE, readManifest(INITDB_IMAGE));
  console.log(`the migrated image holds ${total} migrations`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
