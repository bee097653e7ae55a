import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCK_FILE } from '../../src/store/data-dir-lock.ts';
import { freePort } from '../support/free-port.ts';
import { BIN, exitOf, LAUNCHER, REPO, runCli, runProcess, spawnGateway, type GatewayProcess } from '../support/process.ts';

// What the README promises a newcomer, run as the README writes it: `npm start` serves on embedded PGlite with
// the example config, and its `npx oncehook send-sample` lines, read from the README itself, get the answers their
// comments promise. npx runs with an npm cache of its own, so its first command is a first try, as on a fresh
// machine: npx links the checkout into that cache and runs its postinstall again, on a driver already repaired.

/** The quick start's sample lines: the arguments after `npx oncehook`, and the decision the comment promises. */
function readmeSamples(): { args: string[]; decision: string }[] {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const lines = [...readme.matchAll(/^npx oncehook (send-sample [^#\n]+?)\s+# → (?:"decision": )?"(\w+)"/gm)];
  return lines.map((m) => ({ args: m[1]!.split(/\s+/), decision: m[2]! }));
}

describe('the README\'s quick start, as written', () => {
  const root = mkdtempSync(join(tmpdir(), 'oncehook-quick-start-'));
  const npx = { npm_config_cache: join(root, 'npm-cache'), npm_config_update_notifier: 'false' };
  let started: ChildProcess;
  let output = '';
  let url = '';

  beforeAll(async () => {
    const port = await freePort();
    // The README's environment: no config named, no database; only the port and the data directory are the test's.
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), ONCEHOOK_DATA_DIR: join(root, 'data'), LOG_LEVEL: 'info' };
    delete env.ONCEHOOK_CONFIG;
    delete env.DATABASE_URL;
    // Its own process group: npm start's gateway is npm's child, and the stop must reach it.
    started = spawn('npm', ['start'], {
      cwd: REPO,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const onData = (chunk: Buffer) => (output += chunk.toString());
    started.stdout!.on('data', onData);
    started.stderr!.on('data', onData);
    const deadline = Date.now() + 60_000;
    while (!output.includes(`listening on http://127.0.0.1:${port}`)) {
      if (started.exitCode !== null || Date.now() > deadline) throw new Error(`npm start did not listen:\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    url = `http://127.0.0.1:${port}`;
  }, 90_000);

  afterAll(async () => {
    if (started.exitCode === null) process.kill(-started.pid!, 'SIGTERM');
    await exitOf(started);
    rmSync(root, { recursive: true, force: true });
  });

  it('npx oncehook --help works the first time', async () => {
    const help = await runProcess('npx', ['oncehook', '--help'], { env: npx });
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toContain('send-sample');
  });

  it('gives each sample line the decision its comment promises', async () => {
    const samples = readmeSamples();
    expect(samples.map((s) => s.decision)).toEqual(['accepted', 'duplicate_delivery', 'duplicate_event', 'accepted']);
    for (const { args, decision } of samples) {
      const sent = await runProcess('npx', ['oncehook', ...args], { env: { ...npx, ONCEHOOK_URL: url } });
      expect(sent.code, sent.stderr).toBe(0);
      // `POST <url> → 200`, then the gateway's JSON answer.
      const answer = JSON.parse(sent.stdout.slice(sent.stdout.indexOf('\n') + 1)) as { decision: string };
      expect(answer.decision, args.join(' ')).toBe(decision);
    }
  });
});

// Started from a directory that is not the checkout, as a service manager would (`--config` and the data
// directory elsewhere): the launcher's tsx must read the checkout's tsconfig.json, not the working directory's,
// or every dashboard page fails. From the sources whatever dist/ holds, for that is where the difference lies.
describe('the launcher from another directory, through tsx', () => {
  const elsewhere = mkdtempSync(join(tmpdir(), 'oncehook-elsewhere-'));
  const dataDir = join(elsewhere, 'data');
  const checkout = { bin: LAUNCHER, cwd: elsewhere };
  // The refusals below are the same code from the run's build, from the same directory, at a fraction of the start.
  const built = { bin: BIN, cwd: elsewhere };
  const env = { DATABASE_URL: undefined, ONCEHOOK_DATA_DIR: dataDir, ONCEHOOK_CONFIG: join(REPO, 'oncehook.config.json'), ONCEHOOK_FROM_SOURCES: '1' };
  let gateway: GatewayProcess;

  beforeAll(async () => {
    gateway = await spawnGateway({ env: { ...env, ONCEHOOK_ADMIN_TOKEN: 'newcomer-admin-token-0123456789' }, ...checkout });
  });
  afterAll(async () => {
    await gateway?.stop();
    // A clean stop gives the directory back.
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
    rmSync(elsewhere, { recursive: true, force: true });
  });

  it('serves the dashboard', async () => {
    expect(gateway.output()).toContain('running the TypeScript sources through tsx');
    const login = await fetch(`${gateway.url}/ui/login`);
    expect(login.status).toBe(200);
    expect(await login.text()).toContain('<form method="post" action="/ui/login"');
  });

  it('serves /healthz and /readyz', async () => {
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    expect(await (await fetch(`${gateway.url}/readyz`)).json()).toMatchObject({ ok: true });
    expect(gateway.output()).toContain('embedded PGlite');
  });

  // PGlite keeps no lock of its own: a second `npm start` or `oncehook migrate` on a running gateway's directory
  // ran a second PostgreSQL on the same files. (A lock left by kill -9 is taken over: forward-kill.test.ts.)
  it('refuses a second process on its data directory, naming the one that has it', async () => {
    const refusal = `in use by process ${gateway.child.pid}`;
    await expect(spawnGateway({ env, ...built })).rejects.toThrow(refusal);
    const migrate = await runCli(['migrate'], env, built);
    expect(migrate.code).toBe(1);
    expect(migrate.stderr).toContain(refusal);
    expect(migrate.stderr).not.toMatch(/^\s+at /m);
    expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
  });

  it('send-sample names an unknown source and exits non-zero', async () => {
    const result = await runCli(['send-sample', 'nope', '--url', gateway.url], env, built);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('no source "nope"');
  });
});
