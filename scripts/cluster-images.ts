// How the cluster images are made (src/store/cluster-image.ts): by `npm run cluster-image`, and by the test of an
// image a release before this one migrated.
import { createReadStream, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream';
import { brotliCompressSync, constants, createBrotliDecompress } from 'node:zlib';
import { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import type { ClusterImage, ImageManifest } from '../src/store/cluster-image.ts';
import type { Db } from '../src/store/connect.ts';
import { migratePglite, THIS_RELEASE, type Migrated, type Release } from '../src/store/migrate.ts';
import { extractTar, writeTar, type TarEntry } from '../src/store/tar.ts';

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

/**
 * Writes the cluster in `dir`, shut down cleanly, as `image`: its archive, and `manifest` beside it. The archive holds
 * no times and no owners. Brotli at its best (the default) takes ~30 s here for ~1.2 MB of the ~40 MB.
 */
export function writeImage(dir: string, image: ClusterImage, manifest: ImageManifest, quality: number = constants.BROTLI_MAX_QUALITY): { bytes: number; unpacked: number } {
  const tar = writeTar(entriesOf(dir));
  const archive = brotliCompressSync(tar, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: quality,
      [constants.BROTLI_PARAM_LGWIN]: constants.BROTLI_MAX_WINDOW_BITS,
      [constants.BROTLI_PARAM_SIZE_HINT]: tar.length,
    },
  });
  writeFileSync(image.archive, archive);
  writeFileSync(image.manifest, `${JSON.stringify(manifest, null, 2)}\n`);
  return { bytes: archive.length, unpacked: tar.length };
}

/** Extracts `image`'s cluster into `dir`. */
export async function extractImage(image: ClusterImage, dir: string): Promise<void> {
  await extractTar(pipeline(createReadStream(image.archive), createBrotliDecompress(), () => {}), dir);
}

/** Migrates the cluster in `dir` as a start of `release` would, and shuts it down cleanly. */
export async function migrateCluster(dir: string, release: Release = THIS_RELEASE): Promise<Migrated> {
  const client = await PGlite.create({ dataDir: dir });
  try {
    return await migratePglite(drizzle(client) as unknown as Db, release);
  } finally {
    await client.close();
  }
}
