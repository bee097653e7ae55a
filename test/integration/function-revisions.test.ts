import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFunctions, UnknownFunctionRevision } from '../../src/store/functions.ts';
import { migrate } from '../../src/store/migrate.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { freshStore, type TestStore } from '../support/engine.ts';

/**
 * The database functions are applied after the migrations, each when its file's revision is one the database does
 * not hold yet, and a database holding a revision this build does not know is refused before anything is applied.
 */
let t: TestStore;
beforeAll(async () => {
  t = await freshStore();
});
afterAll(async () => t?.close());

const files = readFunctions();
const recorded = () => rowsOf<{ name: string; revision: number; sha256: string }>(t.store.db, sql`select name, revision, sha256 from drizzle.oncehook_functions order by name`);
/** Each function's row version in the catalog: a new one whenever the function is created again. */
const versions = async () =>
  Object.fromEntries(
    (await rowsOf<{ name: string; version: string }>(t.store.db, sql`select proname as name, xmin::text as version from pg_proc where proname like 'oncehook\_%'`)).map((r) => [r.name, r.version]),
  );
const definition = async (name: string) =>
  (await rowsOf<{ d: string }>(t.store.db, sql`select pg_get_functiondef(p.oid) as d from pg_proc p where p.proname = ${name}`))[0]!.d;
const migrateAgain = () => migrate(t.store, t.database.url);

describe('database functions', () => {
  it('are recorded with the revision and content of their file', async () => {
    expect(await recorded()).toEqual(files.map(({ name, revision, sha256 }) => ({ name, revision, sha256 })));
  });

  it('are created again only when a file has a revision the database does not hold', async () => {
    const [changed, ...unchanged] = files;
    const before = await versions();
    expect(await migrateAgain()).toEqual({ applied: 0, total: expect.any(Number) });
    expect(await versions()).toEqual(before);

    // As a database an earlier release of that function was applied to.
    await t.store.db.execute(sql`update drizzle.oncehook_functions set revision = revision - 1, sha256 = 'earlier' where name = ${changed!.name}`);
    await migrateAgain();
    const after = await versions();
    expect(after[changed!.name]).not.toBe(before[changed!.name]);
    for (const { name } of unchanged) expect(after[name]).toBe(before[name]);
    expect(await recorded()).toEqual(files.map(({ name, revision, sha256 }) => ({ name, revision, sha256 })));
  });

  // A rolling upgrade: workers of a build whose claim opened a ledger row, and whose finish closes it, still running
  // on the migrated database. Their claim is gone, so they send nothing their finish could not record.
  it('leave no claim of the builds whose claim opened the ledger row', async () => {
    await t.store.db.execute(sql`create function oncehook_claim_tasks(text, jsonb, int) returns int language sql as 'select 1'`);
    await t.store.db.execute(sql`create function oncehook_claim_limited(text, jsonb, jsonb, int) returns int language sql as 'select 1'`);
    await t.store.db.execute(sql`delete from drizzle.oncehook_functions where name like 'oncehook\_claim\_batch%'`);
    await migrateAgain();
    const left = await rowsOf<{ name: string }>(t.store.db, sql`select proname as name from pg_proc where proname like 'oncehook\_claim\_%' order by 1`);
    expect(left.map((r) => r.name)).toEqual(['oncehook_claim_batch', 'oncehook_claim_batch_limited']);
    expect(await recorded()).toEqual(files.map(({ name, revision, sha256 }) => ({ name, revision, sha256 })));
  });

  it('refuse a build older than the database, in one line naming the function, changing nothing', async () => {
    const [newer] = files;
    const kept = await definition(newer!.name);
    const before = await versions();
    await t.store.db.execute(sql`update drizzle.oncehook_functions set revision = revision + 1 where name = ${newer!.name}`);
    const refused = await migrateAgain().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(UnknownFunctionRevision);
    expect((refused as Error).message).toBe(
      `the database has revision ${newer!.revision + 1} of ${newer!.name}, and this build knows revision ${newer!.revision}: a newer release migrated it — run that release or a later one`,
    );
    expect(await versions()).toEqual(before);
    expect(await definition(newer!.name)).toBe(kept);

    // The same revision with other content: a change whose revision was not raised.
    await t.store.db.execute(sql`update drizzle.oncehook_functions set revision = revision - 1, sha256 = 'other' where name = ${newer!.name}`);
    await expect(migrateAgain()).rejects.toThrow(
      `the database has another revision ${newer!.revision} of ${newer!.name} than this build: a change to src/store/functions/${newer!.name}.sql needs a higher revision`,
    );
    expect(await versions()).toEqual(before);
  });
});
