import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPostgresDatabase } from '../support/engine.ts';
import { buildInto, npm } from '../support/build.ts';
import { binIn, BUILT_CHECKOUT_ENV, REPO, runCli, spawnGateway, type GatewayProcess } from '../support/process.ts';

// What the Dockerfile does, without Docker: build from the sources in one directory, then install the build
// with production dependencies only in another, and run it there. `tsx` is a devDependency, so it is absent
// and bin/oncehook.js must fall back to dist/; no src/ is copied, so nothing can quietly come from it.

/** The files a production install holds; the Dockerfile's run stage copies the same (dist from the build). */
const RUN_INPUTS = ['package.json', 'package-lock.json', 'bin', 'oncehook.config.json', 'scripts/patch-postgres.mjs'];

describe('the production build, installed with --omit=dev', () => {
  const root = mkdtempSync(join(tmpdir(), 'oncehook-production-'));
  const app = join(root, 'app');

  beforeAll(async () => {
    // The e2e project's global setup already ran `npm run build` on the same inputs for the run.
    let build = process.env[BUILT_CHECKOUT_ENV];
    if (!build) {
      build = join(root, 'build');
      await buildInto(build);
    }

    mkdirSync(app);
    for (const entry of RUN_INPUTS) cpSync(join(REPO, entry), join(app, entry), { recursive: true });
    cpSync(join(build, 'dist'), join(app, 'dist'), { recursive: true });
    // The cache is warm after the checkout's own `npm ci`, so this stays local and takes seconds.
    await npm(['ci', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund'], app);
  }, 90_000);

  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });

  it('holds the compiled code, the migrations and the cluster image, and no TypeScript runner', () => {
    expect(existsSync(join(app, 'dist/src/cli/main.js'))).toBe(true);
    expect(existsSync(join(app, 'dist/adapters/index.js'))).toBe(true);
    expect(existsSync(join(app, 'dist/src/store/migrations/meta/_journal.json'))).toBe(true);
    expect(existsSync(join(app, 'dist/src/store/cluster-image/pglite-cluster.tar.br'))).toBe(true);
    expect(existsSync(join(app, 'node_modules/tsx'))).toBe(false);
    expect(existsSync(join(app, 'node_modules/typescript'))).toBe(false);
    expect(existsSync(join(app, 'src'))).toBe(false);
  });

  // The version is package.json's, imported with the code: the build must carry it, with no src/ to fall back on.
  it('says its version as the checkout does', async () => {
    const { stdout, code } = await runCli(['--version'], {}, { cwd: app, bin: binIn(app) });
    expect(code).toBe(0);
    expect(stdout).toBe(`${JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).version}\n`);
  });

  /** A database to run on: what the process gets in its environment, and how to remove it after. */
  interface Engine {
    name: string;
    /** What the start-up log says of where it stores. */
    log: string[];
    open(): Promise<{ env: Record<string, string | undefined>; drop(): Promise<void> }>;
  }
  const engines: Engine[] = [
    {
      name: 'embedded PGlite',
      // The new data directory's cluster is extracted from the image in dist/, not made by initdb.
      log: ['embedded PGlite', 'its cluster came from the image shipped with oncehook'],
      // Inside root, which afterAll removes.
      open: async () => ({ env: { DATABASE_URL: undefined, ONCEHOOK_DATA_DIR: join(root, 'pglite') }, drop: async () => {} }),
    },
    {
      name: 'a fresh PostgreSQL database',
      log: ['PostgreSQL'],
      async open() {
        const database = await freshPostgresDatabase();
        return { env: { DATABASE_URL: database.url, ONCEHOOK_DATA_DIR: undefined }, drop: () => database.drop() };
      },
    },
  ];

  for (const engine of engines) {
    it(`serves under NODE_ENV=production on ${engine.name}, accepts a signed sample, stops on SIGTERM`, async () => {
      const database = await engine.open();
      // ONCEHOOK_CONFIG unset: the example config in the install's working directory, as in the image.
      const env = { ...database.env, NODE_ENV: 'production', ONCEHOOK_CONFIG: undefined, ONCEHOOK_ADMIN_TOKEN: 'production-build-admin-token' };
      const installed = { cwd: app, bin: binIn(app) };
      let gateway: GatewayProcess | undefined;
      try {
        gateway = await spawnGateway({ ...installed, env });
        for (const line of engine.log) expect(gateway.output()).toContain(line);
        expect(await (await fetch(`${gateway.url}/healthz`)).json()).toEqual({ ok: true });
        expect(await (await fetch(`${gateway.url}/readyz`)).json()).toMatchObject({ ok: true });

        // Accepted means the tables exist: the migrations were found in dist/ and applied.
        const sample = await runCli(['send-sample', 'shop', '--url', gateway.url, '--json', '--event-id', '7001'], env, installed);
        expect(sample.code, sample.stderr).toBe(0);
        const answer = JSON.parse(sample.stdout);
        expect(answer).toMatchObject({ decision: 'accepted', eventId: '7001' });
        // The example's crm-contact action has a transform: built, it runs in its worker thread from dist/ too.
        const contact = answer.tasks.find((t: { action: string }) => t.action === 'crm-contact');
        const view = await (await fetch(`${gateway.url}/api/tasks/${contact.id}`, { headers: { authorization: 'Bearer production-build-admin-token' } })).json();
        expect(view.transformError).toBeNull();
        expect(JSON.parse(view.body.text)).toMatchObject({ email: 'sample@example.com', external_id: contact.id });

        await gateway.stop();
        expect(gateway.child.exitCode, gateway.output()).toBe(0);
        expect(gateway.output()).toContain('shutting down');
      } finally {
        await gateway?.kill();
        await database.drop();
      }
    });
  }
});
