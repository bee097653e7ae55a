import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPostgresDatabase, PG_ADMIN_URL, type TestDatabase } from '../support/engine.ts';
import { runCli } from '../support/process.ts';

// Trust authentication ignores a password; one is put in the URL all the same, to be looked for in the output.
const PASSWORD = new URL(PG_ADMIN_URL).password || 'pw-s3cret-4b1d';
const withPassword = (url: URL) => {
  url.password = PASSWORD;
  return url.toString();
};

/** What a person must see: one line on stderr, naming the problem, with no stack and no password. */
function expectOneLine(result: { code: number; stdout: string; stderr: string }, problem: RegExp) {
  expect(result.code).toBe(1);
  expect(result.stderr).toMatch(/^oncehook: [^\n]+\n$/);
  expect(result.stderr).toMatch(problem);
  expect(result.stdout + result.stderr).not.toContain(PASSWORD);
}

const listening = (server: Server) => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));

describe('a start that cannot succeed says why in one line', () => {
  let database: TestDatabase;
  let taken: Server;
  let takenPort: number;
  let closedPort: number;

  beforeAll(async () => {
    database = await freshPostgresDatabase();
    taken = createServer();
    takenPort = await listening(taken);
    // A port that was just free and is closed again: connecting to it is refused.
    const closed = createServer();
    closedPort = await listening(closed);
    await new Promise((resolve) => closed.close(resolve));
  });
  afterAll(async () => {
    taken?.close();
    await database?.drop();
  });

  it('names a missing database, a refused connection, a malformed URL and a port in use', async () => {
    const missing = new URL(PG_ADMIN_URL);
    missing.pathname = '/oncehook_no_such_database';
    const refused = new URL(PG_ADMIN_URL);
    refused.port = String(closedPort);
    const [noDatabase, noServer, notUrl, portInUse] = await Promise.all([
      runCli(['migrate'], { DATABASE_URL: withPassword(missing) }),
      runCli(['serve', '--port', '0', '--db-wait', '0'], { DATABASE_URL: withPassword(refused) }),
      runCli(['migrate'], { DATABASE_URL: `postgres//postgres:${PASSWORD}@127.0.0.1/oncehook` }),
      runCli(['serve', '--port', String(takenPort), '--host', '127.0.0.1'], { DATABASE_URL: withPassword(new URL(database.url!)) }),
    ]);
    expectOneLine(noDatabase, /cannot reach PostgreSQL at 127\.0\.0\.1:\d+\/oncehook_no_such_database: database "oncehook_no_such_database" does not exist — create it first/);
    expectOneLine(noServer, new RegExp(`cannot reach PostgreSQL at 127\\.0\\.0\\.1:${closedPort}/\\w+: connection refused`));
    expectOneLine(notUrl, /DATABASE_URL is not a URL/);
    expectOneLine(portInUse, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${takenPort}: the port is in use`));
  });

  // postgres.js reads any scheme as PostgreSQL's: a MySQL URL pointing at a PostgreSQL server used to get as far
  // as `database "x" does not exist`.
  it('refuses a DATABASE_URL of another scheme as a bad setting, exit 2, saying only its scheme', async () => {
    const mysql = new URL(PG_ADMIN_URL);
    mysql.pathname = '/x';
    const url = withPassword(mysql).replace(/^\w+:/, 'mysql:');
    const results = await Promise.all([runCli(['migrate'], { DATABASE_URL: url }), runCli(['serve', '--port', '0'], { DATABASE_URL: url })]);
    for (const result of results) {
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/^DATABASE_URL is a mysql:\/\/ URL, not PostgreSQL's: write it as postgres:\/\/USER:PASSWORD@HOST:5432\/DATABASE \(or postgresql:\/\/\)\n/);
      expect(result.stdout + result.stderr).not.toContain(PASSWORD);
      expect(result.stdout).toBe('');
    }
  });

  // A rollback to an older release while a newer one runs: the older would put its definitions back under it.
  it('refuses a database whose functions a newer release wrote, in one line', async () => {
    const url = withPassword(new URL(database.url!));
    expect((await runCli(['migrate'], { DATABASE_URL: url })).code).toBe(0);
    const sql = postgres(database.url!, { max: 1, onnotice: () => {} });
    try {
      const [newer] = await sql<{ revision: number }[]>`update drizzle.oncehook_functions set revision = revision + 1
        where name = 'oncehook_claim_batch' returning revision`;
      expectOneLine(
        await runCli(['serve', '--port', '0', '--db-wait', '0'], { DATABASE_URL: url }),
        new RegExp(`the database has revision ${newer!.revision} of oncehook_claim_batch, and this build knows revision ${newer!.revision - 1}: a newer release migrated it`),
      );
    } finally {
      await sql.end();
    }
  });

  // The port is bound before the database is opened: on a new embedded data directory, initdb took seconds
  // before the taken port was found.
  it('finds a port in use before opening the database: the new data directory is never made', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'oncehook-port-first-'));
    const dataDir = join(parent, 'data');
    try {
      const started = performance.now();
      const result = await runCli(['serve', '--port', String(takenPort), '--host', '127.0.0.1'], { DATABASE_URL: undefined, ONCEHOOK_DATA_DIR: dataDir });
      expectOneLine(result, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${takenPort}: the port is in use`));
      expect(existsSync(dataDir)).toBe(false);
      // A process start and nothing more; initdb alone takes seconds.
      expect(performance.now() - started).toBeLessThan(10_000);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });
});
