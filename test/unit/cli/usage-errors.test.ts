import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO, runCli } from '../../support/process.ts';

const HINT = '(add --help to see how the command is used)\n';

describe('a command line the parser refuses', () => {
  // Before the database or the config is touched: none of these gets as far as opening anything.
  it('exits 2 with the one-line hint, in every command alike', async () => {
    const refused = await Promise.all([
      runCli(['serve', '--port', 'abc']),
      runCli(['serve', '--no-such-option']),
      runCli(['migrate', '--no-such-option']),
      runCli(['check-config', 'a.json', 'b.json']),
      runCli(['send-sample']),
      runCli(['demo-downstream', '--port', '70000']),
      runCli(['tasks', '--order', 'sideways']),
      runCli(['send-sample', 'shop', '--url', 'not-a-url']),
      runCli(['stats', '--token', 'x'], { ONCEHOOK_URL: 'ftp://127.0.0.1' }),
      runCli(['serve'], { LOG_LEVEL: 'verbose' }),
    ]);
    for (const result of refused) {
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/^error: [^\n]+\n/);
      expect(result.stderr.endsWith(HINT)).toBe(true);
    }
    expect(refused.at(-1)!.stderr).toMatch(/'verbose' from env 'LOG_LEVEL' is invalid\. Allowed choices are trace, debug, info, warn, error, fatal, silent\.\n/);
  });

  it('exits 0 for --help and --version', async () => {
    const [serve, migrate, version, short] = await Promise.all([
      runCli(['serve', '--help']),
      runCli(['migrate', '--help']),
      runCli(['--version']),
      runCli(['-V']),
    ]);
    expect([serve.code, migrate.code, version.code, short.code]).toEqual([0, 0, 0, 0]);
    expect(serve.stdout).toContain('--port');
    const { version: ofPackage } = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8'));
    expect([version.stdout, short.stdout]).toEqual([`${ofPackage}\n`, `${ofPackage}\n`]);
  });
});
