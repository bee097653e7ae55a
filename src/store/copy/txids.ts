import postgres from 'postgres';
import type { Query, Table } from './catalog.ts';
import { ident } from './sql-text.ts';

/**
 * Transaction IDs, mapped from the embedded server's to the target's.
 *
 * A `txid` column holds the ID of the transaction that inserted its row, and the admin lists page on it: a page
 * shows the rows whose txid is below the oldest transaction still running (src/store/queries/cursor.ts). Copied
 * as they are, the embedded server's IDs mean nothing on the target: above the target's own counter, every
 * copied row would stay hidden from the lists until the target had used that many transactions. So each
 * distinct source ID becomes a target ID below the copying transaction's own, in the same order: rows that
 * shared a transaction still share one, and a row inserted after another still sorts after it.
 */

/** Below this, transaction IDs are the system's (FirstNormalTransactionId). */
const FIRST_NORMAL = 3n;

/** The map, kept in the source's copy (source.ts), where copy-data may write. */
const MAP = 'pg_temp.oncehook_copy_txids';

function everyTxid(tables: readonly Table[]): string {
  return tables
    .flatMap((t) => t.columns.filter((c) => c.xid8).map((c) => `select ${ident(c.name)} as old from ${ident(t.name)}`))
    .join('\nunion\n');
}

/** How many distinct transactions inserted the source's rows. */
export async function countTransactions(source: Query, tables: readonly Table[]): Promise<number> {
  const union = everyTxid(tables);
  if (!union) return 0;
  const [row] = await source<{ n: string }>(`select count(*)::text as n from (${union}) u`);
  return Number(row!.n);
}

/**
 * Makes sure the target's next transaction ID leaves `count` normal IDs below it, using up IDs where a young
 * server has not yet: each iteration commits a transaction that only takes its ID (about 120,000 a second
 * here; a server has 2^31 before it must freeze rows, so this costs nothing lasting). Answers how many it used.
 * On a connection of its own, since it turns off synchronous commit for its session.
 */
export async function makeRoom(targetUrl: string, count: number): Promise<number> {
  const client = postgres(targetUrl, { max: 1, onnotice: () => {}, fetch_types: false });
  try {
    const [row] = await client<{ next: string }[]>`select pg_snapshot_xmax(pg_current_snapshot())::text as next`;
    const short = BigInt(count) + FIRST_NORMAL - BigInt(row!.next);
    if (short <= 0n) return 0;
    await client`set synchronous_commit = off`;
    await client.unsafe(`do $$ begin for i in 1..${short} loop perform pg_current_xact_id(); commit; end loop; end $$`).simple();
    return Number(short);
  } finally {
    await client.end({ timeout: 5 });
  }
}

/**
 * Fills the map: the source's distinct IDs, in order, become `below - count` … `below - 1`, where `below` is the
 * copying transaction's own ID on the target. Every copied row is then visible once that transaction commits.
 */
export async function mapTransactions(source: Query, tables: readonly Table[], count: number, below: bigint): Promise<void> {
  const union = everyTxid(tables);
  if (!union) return;
  const first = below - BigInt(count);
  if (first < FIRST_NORMAL) throw new Error(`the target has only ${below - FIRST_NORMAL} transaction IDs below its own for ${count}`);
  await source(`create temp table oncehook_copy_txids (old xid8 primary key, new xid8 not null)`);
  await source(
    `insert into ${MAP} select old, ($1::numeric + row_number() over (order by old) - 1)::text::xid8 from (${union}) u`,
    [first.toString()],
  );
}

/** What the source's copy reads for `column`: its mapped ID where it is one, else the column itself. */
export function sourceValue(column: { name: string; xid8: boolean }): string {
  return column.xid8 ? `(select new from ${MAP} where old = t.${ident(column.name)})` : `t.${ident(column.name)}`;
}
