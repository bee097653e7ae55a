import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { functionsToApply, readFunctions, UnknownFunctionRevision, type FunctionFile } from '../../../src/store/functions.ts';

/**
 * Every revision of every database function, with the start of its file's SHA-256. A change to a file fails this
 * test until its revision is raised and the new one added here: a database that holds a revision can then tell an
 * older build from a newer one, and refuses the older. Earlier lines stay, so a revision is never given twice.
 */
const REVISIONS: Record<string, Record<number, string>> = {
  // oncehook_claim_tasks and oncehook_claim_limited before them (revisions 1-3 and 1-2 shipped), which they drop.
  oncehook_claim_batch: { 1: 'baebde4819eea970' },
  oncehook_claim_batch_limited: { 1: '6f6c1f12a8fb4fcd' },
  oncehook_order_hold: { 1: '8b49c57cfd238f8f' },
  oncehook_order_release: { 1: '521e0e6255370698', 2: 'f1dcc8bde0e6bd7e', 3: 'e7ef675b4f949a1b', 4: 'ce60183cd9f0ad0d' },
  oncehook_order_settle: { 1: 'e16789084d336a7b' },
  oncehook_order_settle_row: { 1: 'ff7b54f3e4e96be4', 2: '6e2684b259acbcfd' },
  oncehook_record_deliveries: { 1: '3f9b89806b2dbb0b', 2: 'c820a6b887d815f3', 3: '2100bfe54f87eb33' },
  oncehook_record_known_deliveries: { 1: '1241f7773668db76' },
  oncehook_unknown_outcome_mode: { 1: '57be519d75e20eec' },
};

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function folderWith(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'oncehook-functions-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const fn = (name: string) => `CREATE OR REPLACE FUNCTION ${name}() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;\n`;

describe('the database functions', () => {
  it('each file is at its latest revision here, and its content is the one recorded for it', () => {
    const files = readFunctions();
    expect(Object.fromEntries(files.map((f) => [f.name, f.revision]))).toEqual(
      Object.fromEntries(Object.entries(REVISIONS).map(([name, revisions]) => [name, Math.max(...Object.keys(revisions).map(Number))])),
    );
    for (const file of files) expect(file.sha256.slice(0, 16), `${file.name}.sql at revision ${file.revision}`).toBe(REVISIONS[file.name]![file.revision]);
  });

  it('a file states its revision first and creates the function it is named for', () => {
    const read = readFunctions(folderWith({ 'oncehook_a.sql': `-- revision 3\r\n-- why\r\n${fn('oncehook_a')}`, 'notes.txt': 'not read' }));
    expect(read).toMatchObject([{ name: 'oncehook_a', revision: 3, text: `-- revision 3\n-- why\n${fn('oncehook_a')}` }]);
    expect(() => readFunctions(folderWith({ 'oncehook_a.sql': fn('oncehook_a') }))).toThrow('oncehook_a.sql must start with its revision, as "-- revision 1"');
    expect(() => readFunctions(folderWith({ 'oncehook_a.sql': `-- revision 1\n${fn('oncehook_b')}` }))).toThrow('oncehook_a.sql must create the function it is named for, oncehook_a');
  });

  it('are applied when new or of a higher revision than the database holds, refused when the database holds one this build lacks', () => {
    const file = (name: string, revision: number, sha256: string): FunctionFile => ({ name, revision, sha256, text: '' });
    const files = [file('oncehook_a', 2, 'a2'), file('oncehook_b', 1, 'b1'), file('oncehook_c', 1, 'c1')];
    expect(functionsToApply(files, [{ name: 'oncehook_a', revision: 1, sha256: 'a1' }, { name: 'oncehook_b', revision: 1, sha256: 'b1' }]).map((f) => f.name)).toEqual([
      'oncehook_a',
      'oncehook_c',
    ]);
    // A function a newer release added is not this build's to judge.
    expect(functionsToApply(files, [...files, file('oncehook_d', 1, 'd1')])).toEqual([]);
    expect(() => functionsToApply(files, [{ name: 'oncehook_b', revision: 2, sha256: 'b2' }])).toThrow(UnknownFunctionRevision);
    expect(() => functionsToApply(files, [{ name: 'oncehook_b', revision: 1, sha256: 'b1, edited' }])).toThrow(/another revision 1 of oncehook_b/);
  });
});
