import { describe, expect, it } from 'vitest';
import { runCli } from '../../support/process.ts';

describe('oncehook serve --role', () => {
  it('refuses to split roles without a shared PostgreSQL, naming DATABASE_URL', async () => {
    for (const role of ['web', 'worker']) {
      const result = await runCli(['serve', '--role', role, '--port', '0'], { DATABASE_URL: undefined });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('set DATABASE_URL');
      expect(result.stderr).not.toContain('Usage:');
    }
  });

  it('says what is wrong with an option in one line and a hint, not the whole help', async () => {
    const result = await runCli(['serve', '--port', 'abc']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe("error: option '-p, --port <n>' argument 'abc' is invalid. a port number from 0 to 65535\n(add --help to see how the command is used)\n");
  });
});
