import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MIGRATIONS_FOLDER } from '../../src/store/migrate.ts';

/** The migrations folder as a release that stopped at migration `last` shipped it. */
export function releasedUpTo(last: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'oncehook-migrations-'));
  cpSync(MIGRATIONS_FOLDER, dir, { recursive: true });
  const journalFile = join(dir, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalFile, 'utf8')) as { entries: { tag: string }[] };
  const upTo = journal.entries.findIndex((entry) => entry.tag === last);
  if (upTo < 0) throw new Error(`no migration ${last}`);
  journal.entries = journal.entries.slice(0, upTo + 1);
  writeFileSync(journalFile, JSON.stringify(journal));
  return dir;
}
