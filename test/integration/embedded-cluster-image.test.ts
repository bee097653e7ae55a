import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { afterAll, describe, expect, it } from 'vitest';
import { drizzle } from 'drizzle-orm/pglite';
import { extractImage, migrateCluster, writeImage } from '../../scripts/cluster-images.ts';
import { INITDB_IMAGE, installedPglite, MIGRATED_IMAGE, readManifest, seedDataDir, type ClusterImage } from '../../src/store/cluster-image.ts';
import { openStore, type Db } from '../../src/store/connect.ts';
import { openDurablePglite } from '../../src/store/durable-pglite.ts';
import { appliedFunctions, functionsToApply, readFunctions } from '../../src/store/functions.ts';
import { migrate, migratePglite, MIGRATIONS_FOLDER } from '../../src/store/migrate.ts';
import { engine, freshPostgresDatabase, freshStore } from '../support/engine.ts';
import { releasedUpTo, schemaOf } from '../support/migrations.ts';

const root = mkdtempSync(join(tmpdir(), 'oncehook-image-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The shipped archive, described as made by another PGlite. */
function imageOfAnotherPglite(): ClusterImage {
  const manifest = join(root, 'other-pglite.json');
  writeFileSync(manifest, JSON.stringify({ ...readManifest(INITDB_IMAGE), pglite: '0.0.1-other' }));
  return { archive: INITDB_IMAGE.archive, manifest };
}

/** What PostgreSQL says of its cluster, and what it holds. */
async function describeCluster(client: PGlite) {
  const [control] = (await client.query<{ catalog: number; control: number }>(
    'select catalog_version_no as catalog, pg_control_version as control from pg_control_system()',
  )).rows;
  const databases = (await client.query<{ datname: string }>('select datname from pg_database order by 1')).rows.map((row) => row.datname);
  const [relations] = (await client.query<{ n: number }>('select count(*)::int as n from pg_class')).rows;
  const [version] = (await client.query<{ v: string }>('select version() as v')).rows;
  return { ...control, databases, relations: relations!.n, version: version!.v };
}

const entries = (dir: string) => readdirSync(dir, { recursive: true }).map(String).sort();
const syncs = () => ({ count: 0, seconds: 0, fileSystems: 0 });

describe('the cluster image a new embedded data directory starts from', () => {
  if (engine() === 'postgres') {
    it('is never used on PostgreSQL: the data directory is not even made', async () => {
      const database = await freshPostgresDatabase();
      const dataDir = join(root, 'unused');
      const store = await openStore({ databaseUrl: database.url, dataDir });
      try {
        expect(store.kind).toBe('postgres');
        expect(existsSync(dataDir)).toBe(false);
      } finally {
        await store.close();
        await database.drop();
      }
    });
    return;
  }

  // The image stands in for initdb, so it must be what initdb makes, by the PGlite installed: a PGlite upgraded
  // without `npm run cluster-image` fails here, as its new directories would fall back to initdb.
  it('holds what a fresh initdb of the installed PGlite makes', async () => {
    expect(readManifest(INITDB_IMAGE).pglite).toBe(installedPglite());
    const fromImage = await openDurablePglite(join(root, 'from-image'), INITDB_IMAGE);
    expect(fromImage.seeded).toEqual({ from: 'image' });
    const imaged = await describeCluster(fromImage.client);
    await fromImage.client.close();

    const fromInitdb = await openDurablePglite(join(root, 'from-initdb'), imageOfAnotherPglite());
    expect(fromInitdb.seeded).toEqual({
      from: 'initdb',
      reason: `the cluster image shipped with oncehook was made by PGlite 0.0.1-other, and PGlite ${installedPglite()} is installed`,
    });
    const initdbed = await describeCluster(fromInitdb.client);
    await fromInitdb.client.close();

    expect(imaged).toEqual(initdbed);
    expect(imaged.catalog).toBe(readManifest(INITDB_IMAGE).catalogVersion);
    expect(readFileSync(join(root, 'from-image', 'PG_VERSION'), 'utf8')).toBe(readFileSync(join(root, 'from-initdb', 'PG_VERSION'), 'utf8'));
    expect(readFileSync(join(root, 'from-image', 'PG_VERSION'), 'utf8').trim()).toBe(readManifest(INITDB_IMAGE).postgres);
    expect(entries(join(root, 'from-image'))).toEqual(entries(join(root, 'from-initdb')));
  });

  it('a start killed while extracting leaves no cluster, and the next start makes it whole', async () => {
    const dataDir = join(root, 'cut-short');
    mkdirSync(dataDir);
    const cut = join(root, 'cut-short.tar.br');
    writeFileSync(cut, readFileSync(INITDB_IMAGE.archive).subarray(0, 300_000));
    await expect(seedDataDir(dataDir, syncs(), { archive: cut, manifest: INITDB_IMAGE.manifest })).rejects.toThrow();
    expect(existsSync(join(dataDir, 'PG_VERSION'))).toBe(false);

    const next = await openDurablePglite(dataDir, INITDB_IMAGE);
    expect(next.seeded).toEqual({ from: 'image' });
    expect((await next.client.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
    await next.client.close();
    expect(entries(dataDir)).toEqual(entries(join(root, 'from-image')));
  });

  it('a start killed while moving the cluster into place leaves no cluster, and the next start replaces what it moved', async () => {
    const dataDir = join(root, 'half-moved');
    mkdirSync(dataDir);
    // What such a start leaves: some of the cluster's entries in place, with a file of the next start's own
    // making in one of them, to show it is replaced rather than merged; no PG_VERSION.
    cpSync(join(root, 'from-image', 'base'), join(dataDir, 'base'), { recursive: true });
    writeFileSync(join(dataDir, 'base', 'stray'), 'left by the killed start');
    cpSync(join(root, 'from-image', 'global'), join(dataDir, 'global'), { recursive: true });

    const next = await openDurablePglite(dataDir, INITDB_IMAGE);
    expect(next.seeded).toEqual({ from: 'image' });
    expect((await next.client.query('select count(*)::int as n from pg_database')).rows).toEqual([{ n: 3 }]);
    await next.client.close();
    expect(existsSync(join(dataDir, 'base', 'stray'))).toBe(false);
    expect(entries(dataDir)).toEqual(entries(join(root, 'from-image')));
  });

  it('an existing cluster is kept as it is', async () => {
    const dataDir = join(root, 'from-image');
    const again = await openDurablePglite(dataDir);
    expect(again.seeded).toEqual({ from: 'existing' });
    await again.client.close();
  });

  // A new data directory starts migrated: its first start skips ~0.4 s of CPU. A migration added, or a function's
  // revision raised, without `npm run cluster-image` fails here, as new directories would be migrated at start again.
  it('starts a new data directory with this build\'s migrations and functions applied, as migrate makes them', async () => {
    expect(readManifest(MIGRATED_IMAGE)).toEqual(readManifest(INITDB_IMAGE));
    const made = await freshStore();
    const expected = await schemaOf(made.store.db).finally(() => made.close());
    const store = await openStore({ dataDir: join(root, 'migrated') });
    try {
      const functionsLeft = functionsToApply(readFunctions(), await appliedFunctions(store.db)).map((f) => f.name);
      expect({ migrated: await migrate(store), functionsLeft }, 'run `npm run cluster-image`').toEqual({
        migrated: { applied: 0, total: journalLength() },
        functionsLeft: [],
      });
      expect(await schemaOf(store.db)).toEqual(expected);
    } finally {
      await store.close();
    }
  });

  it('an image an earlier release migrated: its new directory is migrated the rest of the way at start', async () => {
    const release = releasedUpTo('0020_bounded_receipts');
    const cluster = join(root, 'earlier-cluster');
    const earlier: ClusterImage = { archive: join(root, 'earlier.tar.br'), manifest: join(root, 'earlier.json') };
    try {
      await extractImage(INITDB_IMAGE, cluster);
      expect(await migrateCluster(cluster, release)).toEqual({ applied: 21, total: 21 });
      writeImage(cluster, earlier, readManifest(INITDB_IMAGE), 1);
    } finally {
      rmSync(release.migrationsFolder, { recursive: true, force: true });
    }
    const made = await freshStore();
    const expected = await schemaOf(made.store.db).finally(() => made.close());

    const { client, seeded } = await openDurablePglite(join(root, 'from-earlier'), earlier);
    try {
      expect(seeded).toEqual({ from: 'image' });
      const db = drizzle(client) as unknown as Db;
      expect(await migratePglite(db)).toEqual({ applied: journalLength() - 21, total: journalLength() });
      expect(await schemaOf(db)).toEqual(expected);
    } finally {
      await client.close();
    }
  });
});

const journalLength = () => (JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as { entries: unknown[] }).entries.length;
