import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPostgresDatabase } from '../support/engine.ts';
import { buildInto, npm } from '../support/build.ts';
import { waitFor } from '../support/forwarding.ts';
import { BUILT_CHECKOUT_ENV, REPO, runCli, runProcess, spawnGateway, type GatewayProcess } from '../support/process.ts';

// What a user of the package does: `npm pack`, then `npm install -g --omit=dev` of the tarball (into a temporary
// prefix), and `oncehook …` from a directory that has nothing to do with oncehook. No dev dependency is there (no
// tsx, no TypeScript) and no source: what runs is the compiled build the tarball carries. The Dockerfile installs
// the same tarball the same way.

const TOKEN = 'package-test-admin-token-0123456789';

describe('the package, installed with npm install -g --omit=dev', () => {
  const root = mkdtempSync(join(tmpdir(), 'oncehook-package-'));
  /** The ordinary install, and one made with --ignore-scripts (no postinstall: the driver left unrepaired). */
  const prefix = join(root, 'prefix');
  const bare = join(root, 'bare');
  const installed = (at: string) => join(at, 'lib', 'node_modules', 'oncehook');
  /** A directory of the user's own: the gateway's config and data directory are there, and nothing else. */
  const elsewhere = join(root, 'elsewhere');
  const placed = (at: string) => ({ cwd: elsewhere, bin: join(at, 'bin', 'oncehook') });

  beforeAll(async () => {
    // The e2e project's global setup already built the checkout's sources once for the run.
    let build = process.env[BUILT_CHECKOUT_ENV];
    if (!build) {
      build = join(root, 'build');
      await buildInto(build);
    }
    await npm(['pack', '--pack-destination', root], build);
    const [tarball] = readdirSync(root).filter((f) => f.endsWith('.tgz'));
    // The cache is warm after the checkout's own `npm ci`, so these stay local and take seconds.
    const install = ['install', '--global', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund', join(root, tarball!)];
    await Promise.all([npm([...install, '--prefix', prefix], root), npm([...install, '--ignore-scripts', '--prefix', bare], root)]);
    mkdirSync(elsewhere);
  }, 180_000);

  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });

  it('holds the bundled build, the migrations, the cluster image and the repaired driver; no TypeScript', async () => {
    const app = installed(prefix);
    expect(existsSync(join(app, 'dist/src/cli/main.js'))).toBe(true);
    // The transform child, spawned by path, and a bundle of few files: not a module per source file.
    expect(existsSync(join(app, 'dist/src/shape/transform-child.js'))).toBe(true);
    const modules = readdirSync(join(app, 'dist'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.js'));
    expect(modules.length).toBeLessThan(50);
    expect(existsSync(join(app, 'dist/src/store/migrations/meta/_journal.json'))).toBe(true);
    expect(existsSync(join(app, 'dist/src/store/cluster-image/pglite-cluster-migrated.tar.br'))).toBe(true);
    for (const absent of ['src', 'test', 'node_modules/tsx', 'node_modules/typescript', 'node_modules/vitest']) {
      expect(existsSync(join(app, absent)), absent).toBe(false);
    }
    // package.json pins the driver the repairs were written against: an install gets that one, not the newest.
    const locked = JSON.parse(readFileSync(join(REPO, 'package-lock.json'), 'utf8')).packages['node_modules/postgres'].version;
    expect(JSON.parse(readFileSync(join(app, 'node_modules/postgres/package.json'), 'utf8')).version).toBe(locked);
    const repairs = (at: string) => import(pathToFileURL(join(installed(at), 'scripts/patch-postgres.mjs')).href);
    expect((await repairs(prefix)).missingRepairs()).toEqual([]);
    const unrepaired = await repairs(bare);
    expect(unrepaired.missingRepairs()).toEqual(unrepaired.repairs.map((r: { name: string }) => r.name));
  });

  it('answers --version, --help and check-config from an unrelated directory', async () => {
    const version = await runCli(['--version'], {}, placed(prefix));
    expect(version.code).toBe(0);
    expect(version.stdout).toBe(`${JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).version}\n`);
    expect((await runCli(['--help'], {}, placed(prefix))).code).toBe(0);
    const check = await runCli(['check-config', join(installed(prefix), 'oncehook.config.json')], {}, placed(prefix));
    expect(check.code, check.stderr).toBe(0);
  });

  it('serves the embedded default from there: ready, the sign-in page, a sample forwarded; then copy-data', async () => {
    const downstream = await startDemoDownstream(placed(prefix).bin);
    let gateway: GatewayProcess | undefined;
    const database = await freshPostgresDatabase();
    try {
      // The example config, as a user copies it into their own directory, pointed at this demo downstream.
      const example = readFileSync(join(installed(prefix), 'oncehook.config.json'), 'utf8');
      writeFileSync(join(elsewhere, 'oncehook.config.json'), example.replaceAll('http://127.0.0.1:9090', downstream.url));
      // No ONCEHOOK_CONFIG, no ONCEHOOK_DATA_DIR: ./oncehook.config.json and ./.oncehook, in the user's directory.
      const env = { DATABASE_URL: undefined, ONCEHOOK_DATA_DIR: undefined, ONCEHOOK_CONFIG: undefined, NODE_ENV: 'production', ONCEHOOK_ADMIN_TOKEN: TOKEN };
      gateway = await spawnGateway({ ...placed(prefix), env });
      expect(gateway.output()).toContain('its cluster came from the image shipped with oncehook');
      expect(gateway.output()).not.toContain('TypeScript sources');
      expect(existsSync(join(elsewhere, '.oncehook'))).toBe(true);
      expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
      const login = await fetch(`${gateway.url}/ui/login`);
      expect(login.status).toBe(200);
      expect(await login.text()).toContain('<form method="post" action="/ui/login"');

      const sample = await runCli(['send-sample', 'shop', '--url', gateway.url, '--json', '--event-id', '7001'], env, placed(prefix));
      expect(sample.code, sample.stderr).toBe(0);
      const answer = JSON.parse(sample.stdout) as { decision: string; tasks: { id: string; action: string }[] };
      expect(answer.decision).toBe('accepted');
      const task = answer.tasks.find((t) => t.action === 'crm-task')!;
      const view = await waitFor(async () => {
        const seen = (await (await fetch(`${gateway!.url}/api/tasks/${task.id}`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as { state: string };
        return seen.state === 'succeeded' && seen;
      }, 20_000);
      expect(view.state).toBe('succeeded');
      expect(downstream.output()).toContain(`POST /crm/tasks task=${task.id}`);

      await gateway.stop();
      expect(gateway.child.exitCode, gateway.output()).toBe(0);
      // The data directory the gateway left, found as ./.oncehook again.
      const copied = await runCli(['copy-data', '--to', database.url!], { ONCEHOOK_DATA_DIR: undefined }, placed(prefix));
      expect(copied.code, copied.stderr).toBe(0);
    } finally {
      await gateway?.kill();
      downstream.child.kill('SIGKILL');
      await database.drop();
    }
  });

  it('installed with --ignore-scripts: refuses PostgreSQL in one line naming the repair, and starts once it is run', async () => {
    const database = await freshPostgresDatabase();
    const env = { DATABASE_URL: database.url, ONCEHOOK_CONFIG: join(installed(bare), 'oncehook.config.json'), ONCEHOOK_ADMIN_TOKEN: TOKEN };
    let gateway: GatewayProcess | undefined;
    try {
      const refused = await spawnGateway({ ...placed(bare), env }).then(
        () => null,
        (error: Error) => error.message,
      );
      expect(refused).toMatch(/exited with 1 before listening/);
      const line = refused!.split('\n').find((l) => l.includes('repairs'))!;
      expect(line).toMatch(/^oncehook: the PostgreSQL driver lacks \d+ of oncehook's repairs \(null-socket guard; /);
      expect(refused).not.toMatch(/^\s+at /m);
      const command = /run `node ([^`]+)`/.exec(line)![1]!;
      expect(command).toBe(join(installed(bare), 'dist', 'scripts', 'patch-postgres.mjs'));

      const repair = await runProcess(process.execPath, [command]);
      expect(repair.code, repair.stderr).toBe(0);
      // Idempotent: a second run on the repaired driver changes nothing and succeeds.
      expect((await runProcess(process.execPath, [command])).code).toBe(0);

      gateway = await spawnGateway({ ...placed(bare), env });
      expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
      const sample = await runCli(['send-sample', 'shop', '--url', gateway.url, '--json'], env, placed(bare));
      expect(JSON.parse(sample.stdout)).toMatchObject({ decision: 'accepted' });
      await gateway.stop();
      expect(gateway.child.exitCode).toBe(0);
    } finally {
      await gateway?.kill();
      await database.drop();
    }
  });
});

/** `oncehook demo-downstream` of the install on a free port, with what it printed. */
async function startDemoDownstream(bin: string): Promise<{ url: string; child: ChildProcess; output(): string }> {
  const child = spawn(process.execPath, [bin, 'demo-downstream', '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /demo downstream on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match) resolve(match[1]!);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`demo-downstream exited with ${code}:\n${output}`)));
  });
  return { url, child, output: () => output };
}
