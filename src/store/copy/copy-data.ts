import postgres, { type TransactionSql } from 'postgres';
import { assertDriverRepaired } from '../driver-repairs.ts';
import { migratePostgresAt } from '../migrate.ts';
import { catalogDifferences, copyOrder, readSequences, readTables, type Query, type SequenceState, type Table } from './catalog.ts';
import { copyTables, type BatchBounds, type TableProgress } from './copy-table.ts';
import { holdsDatabase, openCopy, type EmbeddedSource } from './source.ts';
import { ident, SESSION } from './sql-text.ts';
import { CopyDataError, list, lockOrRefuse, refuseOtherSchema, refuseUnlessEmpty } from './refusals.ts';
import { tablesWithRows } from './target.ts';
import { countTransactions, makeRoom, mapTransactions, sourceValue } from './txids.ts';
import { tableSum, type TableSum } from './verify.ts';
import { appliedMigrations, knownMigrations } from './versions.ts';

export { CopyDataError } from './refusals.ts';

export type CopyEvent = { kind: 'step'; message: string } | TableProgress;

export interface CopyOptions {
  dataDir: string;
  targetUrl: string;
  onEvent?: (event: CopyEvent) => void;
  /** Smaller batches than copy-table's, so that a test pages through several on a small directory. */
  batch?: BatchBounds;
  /** Stops the copy at its next step or batch, with the signal's reason, rolled back; once committed, no longer. */
  signal?: AbortSignal;
}

export interface CopyReport {
  /** Every table copied, in the order copied, with its count and checksum, the same on both sides, and how long it took. */
  tables: ({ name: string; ms: number } & TableSum)[];
  sequences: SequenceState[];
  /** Distinct transactions the rows were inserted by, mapped to the target's (txids.ts). */
  transactions: number;
  /** Transaction IDs used up on a young target to make room for them. */
  idsUsed: number;
  migrations: number;
  ms: number;
}

const queryOn =
  (sql: postgres.Sql | TransactionSql): Query =>
  <T extends object>(text: string, params?: unknown[]) =>
    sql.unsafe(text, params as postgres.ParameterOrJSON<never>[]) as unknown as Promise<T[]>;

/** lock_timeout's SQLSTATE: the target's tables are held by another session. */
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * Copies an embedded data directory, its gateway stopped, into an empty PostgreSQL database, which it migrates to
 * this build's schema first. Every table of the schema, read from the catalog; every row as it is, in one
 * transaction of the target that also restores the sequences and checks each table's count and checksum before
 * it commits: a failure anywhere leaves the target's tables empty. Nothing in `dataDir` is written but the lock
 * that keeps a gateway from starting on it meanwhile, removed at the end.
 */
export async function copyData(options: CopyOptions): Promise<CopyReport> {
  const { dataDir, targetUrl } = options;
  const started = performance.now();
  let committed = false;
  // Every event is a step or a batch done: where a stop is honoured, until the commit.
  const say = (event: CopyEvent) => {
    if (!committed) options.signal?.throwIfAborted();
    options.onEvent?.(event);
  };
  if (!holdsDatabase(dataDir)) {
    throw new CopyDataError(`no embedded database in ${dataDir} (it has no PG_VERSION): pass the directory the gateway stored in, --data-dir DIR or ONCEHOOK_DATA_DIR`);
  }
  await assertDriverRepaired();
  const release = lockOrRefuse(dataDir);
  const target = postgres(targetUrl, {
    max: 1,
    onnotice: () => {},
    fetch_types: false,
    connect_timeout: 10,
    connection: { application_name: 'oncehook copy-data' },
  });
  let source: EmbeddedSource | undefined;
  try {
    const known = knownMigrations();
    await refuseUnlessEmpty(queryOn(target), known.length);
    say({ kind: 'step', message: `copying ${dataDir} aside to read it, so that opening it changes nothing there` });
    source = await openCopy(dataDir);
    refuseOtherSchema(await appliedMigrations(source.query), known, dataDir);
    say({ kind: 'step', message: `migrating the target to this build's ${known.length} migrations` });
    await migratePostgresAt(targetUrl);
    const tables = copyOrder(await readTables(source.query));
    const differences = catalogDifferences(tables, await readTables(queryOn(target)));
    if (differences.length > 0) throw new CopyDataError(`the data directory's tables are not the target's after migrating it:\n  ${differences.join('\n  ')}`);
    const transactions = await countTransactions(source.query, tables);
    const idsUsed = await makeRoom(targetUrl, transactions);
    if (idsUsed > 0) say({ kind: 'step', message: `used up ${idsUsed} transaction IDs of the young target, so that the rows' ${transactions} fit below the copy's own` });
    const copied = await target.begin((tx) => copyInto(tx, source!, tables, transactions, say, options.batch));
    committed = true;
    say({ kind: 'step', message: 'analyzing the target, so its first queries are planned on its statistics' });
    await target`analyze`;
    return { ...copied, transactions, idsUsed, migrations: known.length, ms: performance.now() - started };
  } catch (error) {
    if ((error as { code?: string }).code === LOCK_NOT_AVAILABLE) {
      throw new CopyDataError('the target is in use: another session holds its tables (a gateway started on it?). Stop it, and copy into a database nothing else uses', { cause: error });
    }
    throw error;
  } finally {
    await source?.close();
    await target.end({ timeout: 5 });
    release();
  }
}

/**
 * The copy proper, in the target's one transaction. The user triggers are off while it runs: inserting a task
 * fires those that write task_refs and task_transitions, which are copied as the source has them, and a second,
 * new row would be a transition nobody made. `ALTER TABLE … DISABLE TRIGGER` is transactional: a rollback
 * restores them, and they are on again before the commit. Foreign-key checks (none today) still run: the tables
 * go in an order that satisfies them.
 */
async function copyInto(
  tx: TransactionSql,
  source: EmbeddedSource,
  tables: readonly Table[],
  transactions: number,
  say: (event: CopyEvent) => void,
  batch: BatchBounds | undefined,
): Promise<Pick<CopyReport, 'tables' | 'sequences'>> {
  const target = queryOn(tx);
  for (const [name, value] of Object.entries(SESSION)) await tx.unsafe(`set local ${name} = '${value}'`);
  await tx.unsafe(`set local lock_timeout = '10s'`);
  for (const table of tables) await tx.unsafe(`alter table ${ident(table.name)} disable trigger user`);
  // Again, now that the tables are locked: a gateway may have written to the target since the first look.
  const filled = await tablesWithRows(target, tables.map((t) => t.name));
  if (filled.length > 0) throw new CopyDataError(`the target database received rows meanwhile (in ${list(filled)}): is a gateway running on it?`);
  const [own] = await tx<{ id: string }[]>`select pg_current_xact_id()::text as id`;
  await mapTransactions(source.query, tables, transactions, BigInt(own!.id));
  const copied = await copyTables(source, tx, tables, say, batch);
  const sequences = await readSequences(source.query);
  for (const sequence of sequences) await restoreSequence(tx, sequence);
  say({ kind: 'step', message: 'checking every table\'s count and checksum against the data directory' });
  const sums = await verify(source.query, target, tables);
  const tookMs = new Map(copied.map((c) => [c.name, c.ms]));
  const there = JSON.stringify(await readSequences(target));
  if (there !== JSON.stringify(sequences)) throw new CopyDataError(`the target's sequences are not the data directory's: ${there} against ${JSON.stringify(sequences)}`);
  for (const table of tables) await tx.unsafe(`alter table ${ident(table.name)} enable trigger user`);
  return { tables: sums.map((sum) => ({ ...sum, ms: tookMs.get(sum.name)! })), sequences };
}

async function verify(source: Query, target: Query, tables: readonly Table[]): Promise<({ name: string } & TableSum)[]> {
  const sums: ({ name: string } & TableSum)[] = [];
  for (const table of tables) {
    const [from, to] = await Promise.all([tableSum(source, table, sourceValue), tableSum(target, table, (c) => `t.${ident(c.name)}`)]);
    if (from.rows !== to.rows || from.sum !== to.sum) {
      throw new CopyDataError(
        `${table.name} differs after the copy: ${from.rows} rows (checksum ${from.sum}) in the data directory, ${to.rows} (checksum ${to.sum}) in the target. Nothing was committed`,
      );
    }
    sums.push({ name: table.name, ...to });
  }
  return sums;
}

/**
 * Sets a target sequence where the source's stands, or back to its start where the source's gave out nothing yet:
 * setval is not undone by a rollback, so a failed copy before this one may have moved it.
 */
async function restoreSequence(tx: TransactionSql, sequence: SequenceState): Promise<void> {
  await tx.unsafe(
    `select setval(format('%I', s.sequencename)::regclass, coalesce($2::bigint, s.start_value), $2::bigint is not null)
     from pg_sequences s where s.schemaname = current_schema() and s.sequencename = $1::text`,
    [sequence.name, sequence.lastValue],
  );
}
