/**
 * A PostgreSQL database holding millions of tasks of finished history (rows.ts), built once and kept between bench
 * runs as a template that each run copies. Named by the schema and this generator, hashed, and the number of
 * tasks: a migration or a change to the rows builds it again. Built under a lock, in a database renamed into place
 * once complete, so a killed build leaves nothing a later run would take for a template.
 *
 * The template holds all but the last day; a copy gets its last day written when it is made, ending at that
 * moment: the dashboard's hour and day then hold history whenever the template was built.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { migratePostgresAt } from '../../src/store/migrate.ts';
import { treeHash } from '../../test/support/tree-hash.ts';
import { databaseUrl } from '../postgres.ts';
import { DAY_MS, HISTORY_DAYS, historyStatements, KEPT_DAYS, type HistorySlice } from './rows.ts';

/**
 * Past this age a template is built again. The bench's config keeps 30 days: a template older than 23 days would
 * hold bodies its retention purges during a measurement.
 */
const MAX_AGE_MS = 20 * DAY_MS;
/** Numbers written in one transaction, between progress lines. */
const SLICE = 250_000;
/** The tables the history fills: their indexes are dropped while it is written and made again after, in one pass each. */
const FILLED = ['deliveries', 'delivery_keys', 'event_keys', 'delivery_bodies', 'tasks', 'task_refs', 'attempts'];
const PREFIX = 'oncehook_history_';

export interface HistoryTemplate {
  name: string;
  tasks: number;
  /** When the template's history ends, a day before it was built. */
  builtAtMs: number;
  /** How long building it took; null when an earlier run built it. */
  buildMs: number | null;
}

type Say = (line: string) => void;

const admin = (serverUrl: string) => postgres(databaseUrl(serverUrl, 'postgres'), { max: 1, onnotice: () => {}, connect_timeout: 5 });

/**
 * The store's migrations and the rows: a change to either is another history. Not the database functions: the
 * gateway applies those at its start on a copy as on any database.
 */
function historyHash(): string {
  return createHash('sha256')
    .update(treeHash(fileURLToPath(new URL('../../src/store/migrations/', import.meta.url))))
    .update(readFileSync(new URL('./rows.ts', import.meta.url)))
    .digest('hex')
    .slice(0, 12);
}

/** The numbers the template holds: all but the last day's share of `tasks`. */
const templateTasks = (tasks: number) => tasks - lastDayTasks(tasks);
const lastDayTasks = (tasks: number) => Math.round(tasks / HISTORY_DAYS);

/** The template of `tasks` tasks, built now if no run built it within MAX_AGE_MS. */
export async function historyTemplate(serverUrl: string, tasks: number, say: Say): Promise<HistoryTemplate> {
  const name = `${PREFIX}${historyHash()}_${tasks}`;
  const sql = admin(serverUrl);
  try {
    // Two runs at once build a template once; a run building another may go on meanwhile.
    await sql`select pg_advisory_lock(hashtext(${name}))`;
    const [found] = await sql<{ comment: string | null }[]>`
      select shobj_description(oid, 'pg_database') as comment from pg_database where datname = ${name}`;
    const meta = found?.comment ? (JSON.parse(found.comment) as { builtAtMs: number }) : null;
    if (meta && Date.now() - meta.builtAtMs < MAX_AGE_MS) {
      say(`history: the template ${name} built ${new Date(meta.builtAtMs).toISOString()} is kept`);
      return { name, tasks, builtAtMs: meta.builtAtMs, buildMs: null };
    }
    await dropStale(sql, name, say);
    const building = `${name}_building`;
    await sql.unsafe(`create database ${building}`);
    const started = performance.now();
    const builtAtMs = Date.now();
    await migratePostgresAt(databaseUrl(serverUrl, building));
    await build(databaseUrl(serverUrl, building), tasks, builtAtMs, say);
    const buildMs = performance.now() - started;
    await sql.unsafe(`comment on database ${building} is '${JSON.stringify({ builtAtMs, tasks })}'`);
    await sql.unsafe(`alter database ${building} rename to ${name}`);
    say(`history: built ${name} in ${(buildMs / 1000).toFixed(0)} s`);
    return { name, tasks, builtAtMs, buildMs };
  } finally {
    await sql`select pg_advisory_unlock(hashtext(${name}))`.catch(() => {});
    await sql.end();
  }
}

/**
 * Drops, each may be gigabytes: templates of another schema or generator, this one gone stale, and builds a killed
 * run left (no run holds their lock). The caller holds `name`'s lock.
 */
async function dropStale(sql: postgres.Sql, name: string, say: Say): Promise<void> {
  const hash = name.slice(PREFIX.length).split('_')[0]!;
  for (const { datname } of await sql<{ datname: string }[]>`select datname from pg_database where datname like ${`${PREFIX}%`}`) {
    const building = datname.endsWith('_building');
    const final = building ? datname.slice(0, -'_building'.length) : datname;
    let drop: boolean;
    if (final === name) drop = true;
    else if (building) {
      // Another template's build: abandoned when nobody holds its lock.
      drop = (await sql<{ free: boolean }[]>`select pg_try_advisory_lock(hashtext(${final})) as free`)[0]!.free;
      if (drop) await sql`select pg_advisory_unlock(hashtext(${final}))`;
    } else drop = !final.startsWith(`${PREFIX}${hash}_`);
    if (!drop) continue;
    say(`history: dropping ${datname}`);
    await sql.unsafe(`drop database if exists ${datname} with (force)`);
  }
}

/** Writes the template's history into the migrated database at `url`: indexes dropped, rows, indexes again. */
async function build(url: string, tasks: number, builtAtMs: number, say: Say): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  try {
    const indexes = await sql<{ table: string; name: string; definition: string; constraint: string | null }[]>`
      select c.relname as table, i.relname as name, pg_get_indexdef(i.oid) as definition,
        (select pg_get_constraintdef(k.oid) from pg_constraint k where k.conindid = i.oid) as constraint
      from pg_index x join pg_class i on i.oid = x.indexrelid join pg_class c on c.oid = x.indrelid
      where c.relname = any(${FILLED}) and c.relnamespace = 'public'::regnamespace order by i.relname`;
    for (const index of indexes) {
      await sql.unsafe(index.constraint ? `alter table ${index.table} drop constraint ${index.name}` : `drop index ${index.name}`);
    }
    const last = templateTasks(tasks);
    const range = { rangeFirst: 1, rangeLast: last, fromMs: builtAtMs - HISTORY_DAYS * DAY_MS, toMs: builtAtMs - DAY_MS };
    await writeSlices(sql, { ...range, keepFromMs: builtAtMs - KEPT_DAYS * DAY_MS }, say);
    const started = performance.now();
    await sql`set maintenance_work_mem = '512MB'`;
    for (const [i, index] of indexes.entries()) {
      say(`history: index ${i + 1} of ${indexes.length}, ${index.name}…`);
      await sql.unsafe(index.constraint ? `alter table ${index.table} add constraint ${index.name} ${index.constraint}` : index.definition);
    }
    const rebuilt = await sql<{ definition: string }[]>`
      select pg_get_indexdef(x.indexrelid) as definition from pg_index x join pg_class c on c.oid = x.indrelid
      where c.relname = any(${FILLED}) and c.relnamespace = 'public'::regnamespace order by 1`;
    const before = indexes.map((index) => index.definition).sort();
    if (JSON.stringify(rebuilt.map((r) => r.definition)) !== JSON.stringify(before)) {
      throw new Error(`the history's indexes differ from the schema's after the rebuild:\n${rebuilt.map((r) => r.definition).join('\n')}`);
    }
    say(`history: ${indexes.length} indexes in ${((performance.now() - started) / 1000).toFixed(0)} s; vacuum and analyze…`);
    // As autovacuum leaves a history that has long been written: visibility known, statistics current.
    for (const table of FILLED) await sql.unsafe(`vacuum (analyze) ${table}`);
  } finally {
    await sql.end();
  }
}

/** Writes the numbers of `range` a slice a transaction, saying how far it got. */
async function writeSlices(sql: postgres.Sql, range: Omit<HistorySlice, 'first' | 'last'>, say: Say): Promise<void> {
  const started = performance.now();
  const total = range.rangeLast - range.rangeFirst + 1;
  // Each slice's numbers are held in a temporary table that the statements read in turn: kept in memory.
  await sql`set temp_buffers = '512MB'`;
  for (let first = range.rangeFirst; first <= range.rangeLast; first += SLICE) {
    const last = Math.min(range.rangeLast, first + SLICE - 1);
    await sql.begin(async (tx) => {
      await tx`set local synchronous_commit = off`;
      for (const statement of historyStatements({ ...range, first, last })) await tx.unsafe(statement);
    });
    const done = last - range.rangeFirst + 1;
    const seconds = (performance.now() - started) / 1000;
    say(`history: ${done.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} tasks written, ${seconds.toFixed(0)} s, ~${((seconds / done) * (total - done)).toFixed(0)} s to go`);
  }
}

/**
 * Writes a copy's last day: the numbers past the template's, ending now, bodies kept. Indexes in place, as the
 * gateway would have written them.
 */
export async function writeLastDay(url: string, tasks: number, say: Say): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  try {
    const now = Date.now();
    await writeSlices(sql, { rangeFirst: templateTasks(tasks) + 1, rangeLast: tasks, fromMs: now - DAY_MS, toMs: now - 60_000, keepFromMs: 0 }, say);
    // Autovacuum summarizes each filled range of the time indexes soon after (autosummarize), and analyzes: a day of
    // history has been. A range not yet summarized is read whole by every count of the last hour.
    await sql`select brin_summarize_new_values('deliveries_received_idx'), brin_summarize_new_values('attempts_started_idx')`;
    for (const table of FILLED) await sql.unsafe(`analyze ${table}`);
  } finally {
    await sql.end();
  }
}
