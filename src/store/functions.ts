import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import type { Db } from './connect.ts';
import { rowsOf } from './rows.ts';

/**
 * The database functions ingest, the claim and the finish call, a file each, named for the function it creates. The
 * migrator applies them after drizzle-kit's migrations, each when the database does not hold its revision yet: a
 * function is edited in place, and its history is git's, not a chain of migrations that restate it whole.
 */
export const FUNCTIONS_FOLDER = fileURLToPath(new URL('./functions', import.meta.url));

/** Where the migrator records the revision of each function it created: beside drizzle's record, which copy-data skips. */
const RECORD = sql`drizzle.oncehook_functions`;

export interface FunctionFile {
  name: string;
  /**
   * The number on the file's first line (`-- revision 3`), raised with every change: the database keeps the highest
   * one applied, and a build that knows only a lower one refuses to start rather than put an older definition back.
   */
  revision: number;
  sha256: string;
  text: string;
}

export function readFunctions(folder = FUNCTIONS_FOLDER): FunctionFile[] {
  return readdirSync(folder)
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .map((file) => {
      // As a checkout on Windows may have its line ends: the same content whatever git wrote.
      const text = readFileSync(join(folder, file), 'utf8').replace(/\r\n/g, '\n');
      const name = file.slice(0, -'.sql'.length);
      const revision = /^-- revision (\d+)\n/.exec(text)?.[1];
      if (revision === undefined) throw new Error(`${file} must start with its revision, as "-- revision 1"`);
      if (!text.includes(`\nCREATE OR REPLACE FUNCTION ${name}(`)) throw new Error(`${file} must create the function it is named for, ${name}`);
      return { name, revision: Number(revision), sha256: createHash('sha256').update(text).digest('hex'), text };
    });
}

/** The database holds a revision of a function this build does not know: a newer release migrated it. */
export class UnknownFunctionRevision extends Error {
  override name = 'UnknownFunctionRevision';
}

interface Applied {
  name: string;
  revision: number;
  sha256: string;
}

/** The revisions the database holds; none before the migrator first applied functions. */
export async function appliedFunctions(db: Pick<Db, 'execute'>): Promise<Applied[]> {
  const [table] = await rowsOf<{ present: boolean }>(db, sql`select to_regclass('drizzle.oncehook_functions') is not null as present`);
  if (!table?.present) return [];
  return rowsOf<Applied>(db, sql`select name, revision, sha256 from ${RECORD}`);
}

/**
 * The files to apply: those whose revision the database does not hold yet. Throws UnknownFunctionRevision when it
 * holds a higher revision of one, or the same revision with other content (a change whose revision was not raised):
 * applied, this build's definition would replace a newer one under the instances that need it.
 */
export function functionsToApply(files: readonly FunctionFile[], applied: readonly Applied[]): FunctionFile[] {
  const held = new Map(applied.map((row) => [row.name, row]));
  return files.filter((file) => {
    const there = held.get(file.name);
    if (there === undefined || there.revision < file.revision) return true;
    if (there.revision > file.revision) {
      throw new UnknownFunctionRevision(
        `the database has revision ${there.revision} of ${file.name}, and this build knows revision ${file.revision}: a newer release migrated it — run that release or a later one`,
      );
    }
    if (there.sha256 !== file.sha256) {
      throw new UnknownFunctionRevision(
        `the database has another revision ${file.revision} of ${file.name} than this build: a change to src/store/functions/${file.name}.sql needs a higher revision`,
      );
    }
    return false;
  });
}

/** Between a function file's statements, as between a migration's. */
const STATEMENT_BREAK = '--> statement-breakpoint';

/** Creates the functions given, and records their revisions, in one transaction: all of them or none. */
export async function applyFunctions(db: Pick<Db, 'transaction'>, files: readonly FunctionFile[]): Promise<void> {
  if (files.length === 0) return;
  await db.transaction(async (tx) => {
    await tx.execute(sql`create schema if not exists drizzle`);
    await tx.execute(sql`create table if not exists ${RECORD} (
      name text primary key, revision int not null, sha256 text not null, applied_at timestamptz not null default now())`);
    for (const file of files) {
      // One statement a call, as the migrations' files are split: a revision that changes what a function returns
      // drops it first, which CREATE OR REPLACE cannot do.
      for (const statement of file.text.split(STATEMENT_BREAK)) await tx.execute(sql.raw(statement));
      await tx.execute(sql`insert into ${RECORD} (name, revision, sha256) values (${file.name}, ${file.revision}, ${file.sha256})
        on conflict (name) do update set revision = excluded.revision, sha256 = excluded.sha256, applied_at = now()`);
    }
  });
}
