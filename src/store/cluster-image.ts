import { createReadStream, existsSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { brotliDecompress, createBrotliDecompress } from 'node:zlib';
import { flushAll, flushPath, markFlushed, type DiskSyncs } from './data-dir-flush.ts';
import { extractTar } from './tar.ts';

/**
 * A new data directory starts from an image of a freshly initialised cluster shipped with oncehook, not from
 * PGlite's initdb, which runs a second PostgreSQL in WebAssembly beside the first and copies its directory over:
 * ~1 GiB resident at its peak and seconds of CPU, on every first start. The image is the same cluster, made once
 * by scripts/make-cluster-image.ts with the PGlite installed then; every data directory made from it has the
 * same system identifier, which only replication would read. An image made by another version of PGlite is not
 * used: its catalog may not be the one this PostgreSQL expects.
 *
 * Two images are shipped. A data directory starts from MIGRATED_IMAGE, the cluster with oncehook's migrations and
 * database functions already applied (~0.4 s of CPU of every first start); the start's `migrate` applies whatever
 * came after the image was made, as on any database. The in-memory databases of the tests start from INITDB_IMAGE,
 * which holds nothing of oncehook's: the upgrade tests migrate it as earlier releases did.
 */
export interface ClusterImage {
  /** The ustar archive of the cluster, compressed with brotli (~1.2 MB; gzip's 4.5 MB unpacked 0.2 s faster). */
  archive: string;
  /** Its description, beside it: what made it. */
  manifest: string;
}

export interface ImageManifest {
  /** The version of the PGlite whose initdb made the cluster. */
  pglite: string;
  /** The cluster's PG_VERSION. */
  postgres: string;
  /** `pg_control_system().catalog_version_no`: PostgreSQL refuses a cluster whose catalog is of another. */
  catalogVersion: number;
}

const FOLDER = new URL('./cluster-image/', import.meta.url);

/** What PGlite's initdb makes. */
export const INITDB_IMAGE: ClusterImage = {
  archive: fileURLToPath(new URL('pglite-cluster.tar.br', FOLDER)),
  manifest: fileURLToPath(new URL('pglite-cluster.json', FOLDER)),
};

/** The same cluster, migrated by this release (`npm run cluster-image` after adding a migration or a function revision). */
export const MIGRATED_IMAGE: ClusterImage = {
  archive: fileURLToPath(new URL('pglite-cluster-migrated.tar.br', FOLDER)),
  manifest: fileURLToPath(new URL('pglite-cluster-migrated.json', FOLDER)),
};

/** PGlite takes a directory that holds this file for a cluster, and runs initdb into one that does not. */
const PG_VERSION = 'PG_VERSION';
/** Where the image is extracted, inside the data directory: on its file system, so its entries can be renamed into it. */
const STAGING = '.oncehook-new-cluster';
/**
 * The size of each piece the archive is decompressed into. zlib's 16 KiB made ~2,500 allocations, which left the
 * process 4–23 MiB larger after a first start than 1 MiB pieces did (`npm start`, three starts each: 263–283 MiB
 * against 259–261).
 */
const CHUNK = 1024 * 1024;

export function readManifest(image: ClusterImage): ImageManifest {
  return JSON.parse(readFileSync(image.manifest, 'utf8')) as ImageManifest;
}

/** The version of the PGlite this process loads. */
export function installedPglite(): string {
  let dir = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const found = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (found.name === '@electric-sql/pglite' && found.version) return found.version;
    }
    if (dirname(dir) === dir) throw new Error('the installed PGlite has no package.json naming its version');
    dir = dirname(dir);
  }
}

/** Why `image` cannot make a cluster for the PGlite installed; undefined when it can. */
function whyUnusable(image: ClusterImage): string | undefined {
  if (!existsSync(image.archive) || !existsSync(image.manifest)) return `no cluster image at ${image.archive}`;
  const made = readManifest(image).pglite;
  const installed = installedPglite();
  if (made !== installed) return `the cluster image shipped with oncehook was made by PGlite ${made}, and PGlite ${installed} is installed`;
  return undefined;
}

/** The image's cluster as one tar, as PGlite's `loadDataDir` takes it; undefined when it cannot be used. */
export async function clusterTar(image: ClusterImage = INITDB_IMAGE): Promise<Blob | undefined> {
  if (whyUnusable(image)) return undefined;
  const tar = await promisify(brotliDecompress)(await readFile(image.archive));
  return new Blob([tar as Uint8Array<ArrayBuffer>]);
}

/** How a data directory came to hold its cluster. `initdb`: it holds none yet, and PGlite's initdb makes it. */
export type Seeded = { from: 'existing' } | { from: 'image' } | { from: 'initdb'; reason: string };

/**
 * Gives `dataDir` the image's cluster unless it holds one. Extracted beside the directory's entries, flushed
 * whole, then renamed into place, `PG_VERSION` last: a start killed at any point leaves a directory without
 * it, which the next start fills again. Entries of the image's names already there are what such a start
 * left, and are replaced: without `PG_VERSION` the directory holds no cluster to keep.
 */
export async function seedDataDir(dataDir: string, syncs: DiskSyncs, image: ClusterImage = MIGRATED_IMAGE): Promise<Seeded> {
  const staging = join(dataDir, STAGING);
  rmSync(staging, { recursive: true, force: true });
  if (existsSync(join(dataDir, PG_VERSION))) return { from: 'existing' };
  const unusable = whyUnusable(image);
  if (unusable) return { from: 'initdb', reason: unusable };
  await extractTar(pipeline(createReadStream(image.archive), createBrotliDecompress({ chunkSize: CHUNK }), () => {}), staging);
  await flushAll(staging, syncs);
  for (const name of readdirSync(staging)) {
    if (name === PG_VERSION) continue;
    rmSync(join(dataDir, name), { recursive: true, force: true });
    renameSync(join(staging, name), join(dataDir, name));
  }
  // The renames on disk before the one that makes the directory a cluster.
  flushPath(dataDir, syncs);
  renameSync(join(staging, PG_VERSION), join(dataDir, PG_VERSION));
  rmdirSync(staging);
  markFlushed(dataDir, syncs);
  return { from: 'image' };
}
