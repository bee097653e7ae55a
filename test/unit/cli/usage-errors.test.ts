import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { logLevel, waitDuration } from '../../../src/cli/options.ts';
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
      runCli(['demo-downstream', '--crm-rate', '0']),
      // Refused without being repeated: the value is a secret, and commander's own refusal would print it.
      runCli(['demo-downstream', '--port', '0', '--crm-token', 'two words']),
      runCli(['demo-downstream', '--port', '0'], { CRM_TOKEN: '' }),
      runCli(['tasks', '--order', 'sideways']),
      runCli(['send-sample', 'shop', '--url', 'not-a-url']),
      runCli(['stats', '--token', 'x'], { ONCEHOOK_URL: 'ftp://127.0.0.1' }),
      runCli(['copy-data']),
      // The URL holds a password: refused by its scheme alone, never repeated.
      runCli(['copy-data', '--to', 'mysql://app:hunter2@db/oncehook', '--data-dir', join(tmpdir(), 'oncehook-never-opened')]),
      // A port and a data directory of its own: were the level let through, a gateway must not start on 8080 here.
      runCli(['serve', '--port', '0'], { LOG_LEVEL: 'verbose', ONCEHOOK_DATA_DIR: join(tmpdir(), 'oncehook-never-opened') }),
    ]);
    for (const result of refused) {
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/^error: [^\n]+\n/);
      expect(result.stderr.endsWith(HINT)).toBe(true);
    }
    expect(refused.map((result) => result.stderr).join('')).not.toMatch(/two words|hunter2/);
    expect(refused.at(-2)!.stderr).toMatch(/^error: --to takes a PostgreSQL URL, not a mysql:\/\/ one: postgres:\/\/USER:PASSWORD@HOST:5432\/DATABASE/);
    expect(refused.at(-1)!.stderr).toMatch(/'verbose' from env 'LOG_LEVEL' is invalid\. one of trace, debug, info, warn, error, fatal, silent\n/);
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

  it('takes --db-wait as a duration, or 0 for none, and refuses anything else', () => {
    expect(['0', '500ms', '60s', '5m'].map(waitDuration)).toEqual([0, 500, 60_000, 300_000]);
    for (const wrong of ['60', '1h', '-1s', 'soon']) expect(() => waitDuration(wrong), wrong).toThrow('a duration like "500ms", "60s" or "5m", or 0 for no wait');
  });

  it('takes a log level in any case, as pino does, and names the levels for one it does not know', () => {
    expect(['INFO', 'Debug', 'warn'].map(logLevel)).toEqual(['info', 'debug', 'warn']);
    expect(() => logLevel('verbose')).toThrow('one of trace, debug, info, warn, error, fatal, silent');
  });
});
