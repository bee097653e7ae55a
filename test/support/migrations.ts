import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MIGRATIONS_FOLDER, type Release } from '../../src/store/migrate.ts';

/** What a release that stopped at migration `last` migrated with: its migrations, and no functions of their own. */
export function releasedUpTo(last: string): Release {
  const dir = mkdtempSync(join(tmpdir(), 'oncehook-migrations-'));
  cpSync(MIGRATIONS_FOLDER, dir, { recursive: true });
  const journalFile = join(dir, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalFile, 'utf8')) as { entries: { tag: string }[] };
  const upTo = journal.entries.findIndex((entry) => entry.tag === last);
  if (upTo < 0) throw new Error(`no migration ${last}`);
  journal.entries = journal.entries.slice(0, upTo + 1);
  writeFileSync(journalFile, JSON.stringify(journal));
  return { migrationsFolder: dir, functionsFolder: null };
}
