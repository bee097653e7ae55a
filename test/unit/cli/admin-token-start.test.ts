import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../support/process.ts';

describe('oncehook serve with an admin token nobody could present', () => {
  it('stops at start-up in one line that names the variable and shows no token', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncehook-token-'));
    try {
      // An address not on this machine (TEST-NET): were the token taken, the start would still end, on that.
      const result = await runCli(['serve', '--port', '0', '--host', '192.0.2.1'], {
        DATABASE_URL: undefined,
        ONCEHOOK_DATA_DIR: join(dir, 'data'),
        ONCEHOOK_ADMIN_TOKEN: 'read-from-a-file\n',
      });
      expect(result.code).toBe(1);
      expect(result.stderr).toBe('oncehook: ONCEHOOK_ADMIN_TOKEN starts or ends with whitespace (a line break read from a file?): remove it\n');
      expect(result.stdout).not.toContain('read-from');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
