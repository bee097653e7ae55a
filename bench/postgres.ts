import postgres from 'postgres';
import type { Cleanup } from './cleanup.ts';

/** Every database the bench creates is named so, with the bench's PID, so leftovers can be told apart. */
const PREFIX = 'oncehook_bench_';

export function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

function admin(serverUrl: string) {
  return postgres(databaseUrl(serverUrl, 'postgres'), { max: 1, onnotice: () => {}, connect_timeout: 5 });
}

export interface BenchDatabase {
  url: string;
  /** Drops it now rather than when the bench ends. */
  drop(): Promise<void>;
}

/**
 * A fresh database for one phase, empty or a copy of `template`, dropped when the phase ends or, failing that, by the cleanup
 * however the bench ends. `WITH (FORCE)` drops it even when a killed process left a connection behind.
 */
export async function freshDatabase(serverUrl: string, phase: string, cleanup: Cleanup, template?: string): Promise<BenchDatabase> {
  const name = `${PREFIX}${process.pid}_${phase.replace(/[^a-z0-9]/g, '_')}`;
  const run = async (statements: string[]) => {
    const sql = admin(serverUrl);
    try {
      for (const statement of statements) await sql.unsafe(statement);
    } finally {
      await sql.end();
    }
  };
  // A template of gigabytes of history: FILE_COPY copies its files, where WAL_LOG would write each block to the WAL.
  await run([`drop database if exists ${name} with (force)`, `create database ${name}${template ? ` template ${template} strategy file_copy` : ''}`]);
  const dropNow = () => run([`drop database if exists ${name} with (force)`]);
  const forget = cleanup.add(`drop database ${name}`, dropNow);
  return {
    url: databaseUrl(serverUrl, name),
    async drop() {
      forget();
      await dropNow();
    },
  };
}

/** Drops databases left by earlier bench runs that were killed outright (their PID no longer runs). */
export async function dropLeftovers(serverUrl: string): Promise<string[]> {
  const sql = admin(serverUrl);
  try {
    const rows = await sql<{ datname: string }[]>`select datname from pg_database where datname like ${`${PREFIX}%`}`;
    const dropped: string[] = [];
    for (const { datname } of rows) {
      const pid = Number(/^oncehook_bench_(\d+)_/.exec(datname)?.[1]);
      if (pid && alive(pid)) continue;
      await sql.unsafe(`drop database if exists ${datname} with (force)`);
      dropped.push(datname);
    }
    return dropped;
  } finally {
    await sql.end();
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The settings that decide what a durable commit costs: a run on a server with fsync off measures nothing. */
export async function serverSettings(serverUrl: string): Promise<Record<string, string>> {
  const sql = admin(serverUrl);
  try {
    const rows = await sql<{ name: string; setting: string }[]>`
      select name, setting from pg_settings
      where name in ('server_version', 'fsync', 'synchronous_commit', 'wal_sync_method', 'commit_delay',
                     'commit_siblings', 'full_page_writes', 'shared_buffers', 'max_connections')
      order by name`;
    return Object.fromEntries(rows.map((r) => [r.name, r.setting]));
  } finally {
    await sql.end();
  }
}

/** Runs one query on a bench database and closes the connection. */
export async function queryOnce<T extends Record<string, unknown>>(url: string, text: string): Promise<T[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  try {
    return (await sql.unsafe(text)) as unknown as T[];
  } finally {
    await sql.end();
  }
}

export interface Counter {
  /** Runs a `select count(*) …` and returns the number. */
  count(query: string): Promise<number>;
  close(): Promise<void>;
}

/** One held connection for repeated counts: opening one per poll would fork a backend ten times a second. */
export function counter(url: string, cleanup: Cleanup): Counter {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  const forget = cleanup.add('close a counting connection', () => sql.end({ timeout: 1 }));
  return {
    async count(query) {
      const [row] = await sql.unsafe<{ n: number }[]>(`select (${query})::int as n`);
      return row!.n;
    },
    async close() {
      forget();
      await sql.end({ timeout: 1 });
    },
  };
}
