import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/connect.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { freshPostgresDatabase, PG_ADMIN_URL, type TestDatabase } from '../support/engine.ts';
import { waitFor } from '../support/forwarding.ts';
import { freePort } from '../support/free-port.ts';
import { BIN, exitOf, REPO, runCli } from '../support/process.ts';
import { proxyTo, type FaultyProxy } from '../support/tcp-proxy.ts';

let database: TestDatabase;
let proxy: FaultyProxy;
let viaProxy: string;
let dir: string;
let configFile: string;

beforeAll(async () => {
  database = await freshPostgresDatabase();
  ({ proxy, url: viaProxy } = await proxyTo(database.url!));
  dir = mkdtempSync(join(tmpdir(), 'oncehook-db-wait-'));
  configFile = join(dir, 'config.json');
  writeFileSync(configFile, JSON.stringify(shopConfig()));
});
afterAll(async () => {
  await proxy?.close();
  await database?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a start while PostgreSQL is away', () => {
  it('serves /healthz, answers /readyz and deliveries 503 while it waits, and is ready once the database appears', async () => {
    await proxy.refuse();
    const port = await freePort();
    const child = spawn(process.execPath, [BIN, 'serve', '--port', String(port), '--host', '127.0.0.1', '--config', configFile], {
      cwd: REPO,
      env: { ...process.env, DATABASE_URL: viaProxy, ONCEHOOK_DB_WAIT: '60s', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const url = `http://127.0.0.1:${port}`;
    try {
      // A process start: seconds on a loaded machine.
      await waitFor(() => /waiting for the database \(connection refused\)/.test(output), 30_000);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      const readyz = await fetch(`${url}/readyz`);
      expect(readyz.status).toBe(503);
      expect(await readyz.json()).toMatchObject({ ok: false, database: 'waiting', reason: 'connection refused' });
      const early = await post(url, 'shop', shopifyDelivery({ eventId: 'while-waiting' }));
      expect(early.status).toBe(503);
      expect(early.headers.get('retry-after')).toMatch(/^\d+$/);

      await proxy.restore();
      await waitFor(async () => (await fetch(`${url}/readyz`)).status === 200, 10_000);
      const accepted = await post(url, 'shop', shopifyDelivery({ eventId: 'while-waiting' }));
      expect([accepted.status, accepted.json.decision]).toEqual([200, 'accepted']);
      expect(output).not.toContain('StartFailure');
    } finally {
      child.kill('SIGTERM');
      await exitOf(child);
    }
  });

  it('gives up after --db-wait with one line and exit 1; a database that does not exist is not waited for', async () => {
    await proxy.refuse();
    const missing = new URL(PG_ADMIN_URL);
    missing.pathname = '/oncehook_no_such_database';
    const started = performance.now();
    const [away, absent] = await Promise.all([
      runCli(['serve', '--port', '0', '--host', '127.0.0.1', '--config', configFile, '--db-wait', '1s'], { DATABASE_URL: viaProxy }),
      runCli(['serve', '--port', '0', '--host', '127.0.0.1', '--config', configFile], { DATABASE_URL: missing.toString() }),
    ]);
    expect(away.code).toBe(1);
    expect(away.stderr).toMatch(/^oncehook: cannot reach PostgreSQL at [^\n]*: connection refused — [^\n]* \(waited 1 s for it; --db-wait sets how long\)\n$/);
    expect(away.stdout).toMatch(/waiting for the database \(connection refused\): try 1 failed/);
    expect(absent.code).toBe(1);
    expect(absent.stderr).toMatch(/^oncehook: cannot reach PostgreSQL at [^\n]*oncehook_no_such_database: database "oncehook_no_such_database" does not exist/);
    expect(absent.stdout).not.toMatch(/waiting for the database/);
    // The default wait is a minute: the absent database failed on its first try, not after it.
    expect(performance.now() - started).toBeLessThan(20_000);
    await proxy.restore();
  });

  // The worker's LISTEN is a step of the start: postgres.js answered every LISTEN after a failed one with that
  // same failure, so the start's next tries failed too, for as long as 96 s with the database back.
  it('subscribes on the next try once the database is back, after a LISTEN that failed', async () => {
    const store = await openStore({ databaseUrl: viaProxy, poolSize: 1 });
    try {
      await proxy.refuse();
      await expect(store.listen('oncehook_wait_test', () => {}, () => {})).rejects.toMatchObject({ code: 'ECONNREFUSED' });
      await proxy.restore();
      const unlisten = await store.listen('oncehook_wait_test', () => {}, () => {});
      await unlisten();
    } finally {
      await store.close();
    }
  });
});
