import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import postgres from 'postgres';
import { PG_ADMIN_URL, RUN_ENV, runDatabasesFile } from './engine.ts';

/**
 * The global setup of the projects that make PostgreSQL databases: names the run, so that its tests' databases
 * carry the run's name and are listed for it, and drops them all once the run is over. A test's own drop only
 * closes its database to connections: PostgreSQL checkpoints at each DROP DATABASE (~0.8 s each, 90 of them in the
 * postgres project, every other test's writes flushed with it), and drops asked for together share their
 * checkpoints. A run that made none does not connect. The first project's setup names the run; the others find
 * the name in the environment, as the workers do.
 */
export function setup(): (() => Promise<void>) | undefined {
  if (process.env[RUN_ENV]) return undefined;
  const run = randomBytes(4).toString('hex');
  process.env[RUN_ENV] = run;
  return async () => {
    delete process.env[RUN_ENV];
    const listed = runDatabasesFile(run);
    if (!existsSync(listed)) return;
    const made = readFileSync(listed, 'utf8').split('\n').filter((name) => name !== '');
    const admin = postgres(PG_ADMIN_URL, { max: 8, onnotice: () => {}, connect_timeout: 5 });
    try {
      await Promise.all(made.map((name) => admin.unsafe(`drop database if exists ${name} with (force)`)));
      rmSync(listed);
    } finally {
      await admin.end();
    }
  };
}
