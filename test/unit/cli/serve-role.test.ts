import { describe, expect, it } from 'vitest';
import { runCli } from '../../support/process.ts';

describe('oncehook serve --role', () => {
  it('refuses to split roles without a shared PostgreSQL, naming DATABASE_URL', async () => {
    for (const role of ['web', 'worker']) {
      const result = await runCli(['serve', '--role', role, '--port', '0'], { DATABASE_URL: undefined });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('set DATABASE_URL');
    }
  });
});
