import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { PG_ADMIN_URL } from "./engine.ts"; const RUN_ENV = "X_UNUSED"; const runDatabasePattern = (r: string) => r;

/**
 * The global setup of every project: names the run, so that the PostgreSQL databases its tests make carry the
 * run's name, and drops them all once the run is over. A test's own drop only closes its database to
 * connections: PostgreSQL checkpoints at each DROP DATABASE (~0.8 s each, 90 of them in the postgres project,
 * every other test's writes flushed with it), and drops asked for together share their checkpoints. Another
 * run on the same server (another checkout's) keeps its databases: only this run's name is dropped. The first
 * project's setup names the run; the others find the name in the environment, as the workers do.
 */
export function setup(): (() => Promise<void>) | undefined {
  if (process.env[RUN_ENV]) return undefined;
  const run = randomBytes(4).toString('hex');
  process.env[RUN_ENV] = run;
  return async () => {
    delete process.env[RUN_ENV];
    const admin = postgres(PG_ADMIN_URL, { max: 8, onnotice: () => {}, connect_timeout: 5 });
    try {
      const made = await admin<{ datname: string }[]>`select datname from pg_database where datname like ${runDatabasePattern(run)}`;
      await Promise.all(made.map(({ datname }) => admin.unsafe(`drop database if exists ${datname} with (force)`)));
    } finally {
      await admin.end();
    }
  };
}
