import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../support/process.ts';

describe('oncehook serve with an admin token nobody could present', () => {
  it('stops at start-up in one line that names the variable and shows no token, before the database is opened', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncehook-token-'));
    const dataDir = join(dir, 'data');
    // An address not on this machine (TEST-NET): were the token taken, the start would still end, on that.
    const serve = (tokens: Record<string, string>) =>
      runCli(['serve', '--port', '0', '--host', '192.0.2.1'], { DATABASE_URL: undefined, ONCEHOOK_DATA_DIR: dataDir, ...tokens });
    try {
      const [fromFile, sameTwice] = await Promise.all([
        serve({ ONCEHOOK_ADMIN_TOKEN: 'read-from-a-file\n' }),
        serve({ ONCEHOOK_ADMIN_TOKENS: 'alice:shared-token,bob:shared-token' }),
      ]);
      expect(fromFile.stderr).toBe('oncehook: ONCEHOOK_ADMIN_TOKEN starts or ends with whitespace (a line break read from a file?): remove it\n');
      expect(sameTwice.stderr).toBe(
        "oncehook: ONCEHOOK_ADMIN_TOKENS: entry 2 of 2 (bob): its token is the same as entry 1 (alice)'s: actions under the two could not be told apart — give each its own token\n",
      );
      for (const result of [fromFile, sameTwice]) {
        expect(result.code).toBe(1);
        expect(result.stdout).toBe('');
      }
      expect(existsSync(dataDir)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
