import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../connect.ts';
import { rowsOf } from '../rows.ts';

/** The backends of the server's other databases holding a transaction ID. */
const OTHER_DATABASES = sql`pg_stat_activity where backend_xid is not null and datname is distinct from current_database()`;

/** The oldest transaction still running, leaving out those `others` (a query of 32-bit xids) names. */
function horizonOutside(others: SQL): SQL {
  return sql`coalesce(
  (select min(x) from pg_snapshot_xip(pg_current_snapshot()) x where x::text::bigint % 4294967296 not in (${others})),
  pg_snapshot_xmax(pg_current_snapshot()))`;
}

/**
 * Cursor pages that neither skip nor repeat while rows are being inserted.
 *
 * An identity column or a timestamp is taken when a row is inserted, not when it commits: a transaction that
 * took seq 41 may commit after one that took 42, so a reader who already paged past 42 would never see 41.
 * Instead every row carries the ID of the transaction that inserted it (`txid`, an xid8), and a page shows
 * only rows below the horizon: the oldest transaction still running. Every transaction below it has
 * finished, so the set of rows below it only ever grows at the top: a row committed later always sorts
 * above every row already shown. Paging on (txid, tiebreak) in either direction then shows each row exactly
 * once. The price: a row appears once every older transaction has finished — ingest commits in milliseconds.
 *
 * Transaction IDs are shared by every database on the server, so `pg_snapshot_xmin` alone would let a long
 * transaction in some other database hold our lists back. The horizon skips the running transactions that
 * pg_stat_activity places in another database; one it cannot place (a prepared transaction, a session the
 * role may not see, one that ended between the statement's snapshot and the read) still counts — erring late,
 * never skipping. The tallies use it as it is: a late horizon only makes their next read count a little more.
 * Pages read the other databases first (`horizonBeside`), so that a row committed before the request is shown.
 */
export const horizon = horizonOutside(sql`select backend_xid::text::bigint from ${OTHER_DATABASES}`);

/**
 * The transactions other databases of the server are running now, for `horizonBeside`. In a statement of its
 * own because `pg_current_snapshot()` is the statement's snapshot, taken before anything in it runs: read in
 * the same statement, pg_stat_activity came after it, and a transaction of another database that ended in
 * between was no longer there to be placed. It then held a page back, and rows committed before the request
 * were missing from it (measured: 356 of 11,839 reads beside a busy database). Read first, every transaction
 * older than what the page must show is still running when it is read, so it is placed.
 */
export async function otherDatabasesXids(db: Db): Promise<string[]> {
  const [row] = await rowsOf<{ xids: string }>(
    db,
    sql`select coalesce(json_agg(backend_xid::text), '[]')::text as xids from ${OTHER_DATABASES}`,
  );
  return JSON.parse(row!.xids) as string[];
}

/** The horizon, with `others` (from `otherDatabasesXids`, read just before) placed in other databases. */
export const horizonBeside = (others: readonly string[]) =>
  horizonOutside(sql`select jsonb_array_elements_text(${JSON.stringify(others)}::jsonb)::bigint`);

export type Order = 'asc' | 'desc';

export interface PageRequest {
  limit: number;
  cursor?: string | undefined;
  /** `desc` (newest first, the default) or `asc` (oldest first: a script following along). */
  order: Order;
}

export interface Page<T> {
  items: T[];
  /** Where the next page starts: the last item's position, or the request's cursor when this page is empty. */
  nextCursor: string | null;
  /** Whether another page is ready now. In `asc` order more may come later from the same cursor. */
  hasMore: boolean;
}

interface Position {
  txid: string;
  tiebreak: string;
}

export function encodeCursor(position: Position): string {
  return Buffer.from(`${position.txid}:${position.tiebreak}`).toString('base64url');
}

/** How a list breaks ties within a transaction: deliveries by their `seq`, tasks by their ID. */
export type TiebreakType = 'bigint' | 'text';

const XID8_MAX = 2n ** 64n - 1n;
const BIGINT_MAX = 2n ** 63n - 1n;

/**
 * The position a cursor names, or null when it is not one this list gave out. Every part is checked against
 * what the query casts it to — the range of an xid8, a bigint for deliveries — so a cursor of the other list
 * or an edited one is refused as input rather than failing the query.
 */
export function decodeCursor(cursor: string, tiebreakType: TiebreakType): Position | null {
  const match = /^(\d{1,20}):(.{1,200})$/s.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match || BigInt(match[1]!) > XID8_MAX) return null;
  const tiebreak = match[2]!;
  if (tiebreakType === 'bigint' && !(/^\d{1,19}$/.test(tiebreak) && BigInt(tiebreak) <= BIGINT_MAX)) return null;
  return { txid: match[1]!, tiebreak };
}

/** The `where` and `order by` of one page over (txid, tiebreak); `tiebreakType` casts the cursor's part. */
export function pageClauses(request: PageRequest, txid: SQL, tiebreak: SQL, tiebreakType: TiebreakType, others: readonly string[]) {
  const parts: SQL[] = [sql`${txid} < ${horizonBeside(others)}`];
  if (request.cursor) {
    const at = decodeCursor(request.cursor, tiebreakType);
    if (!at) throw new Error('unchecked cursor: the API validates cursors before a query');
    const position = sql`(${at.txid}::xid8, ${at.tiebreak}::${sql.raw(tiebreakType)})`;
    parts.push(request.order === 'asc' ? sql`(${txid}, ${tiebreak}) > ${position}` : sql`(${txid}, ${tiebreak}) < ${position}`);
  }
  const direction = sql.raw(request.order === 'asc' ? 'asc' : 'desc');
  return { where: sql.join(parts, sql` and `), orderBy: sql`${txid} ${direction}, ${tiebreak} ${direction}`, limit: request.limit + 1 };
}

/** Cuts the extra row fetched to learn whether another page is ready. */
export function toPage<T>(rows: (T & { cursorTxid: string; cursorTiebreak: string })[], request: PageRequest): Page<T> {
  const hasMore = rows.length > request.limit;
  const kept = rows.slice(0, request.limit);
  const last = kept[kept.length - 1];
  const items = kept.map(({ cursorTxid: _t, cursorTiebreak: _k, ...item }) => item as unknown as T);
  return {
    items,
    nextCursor: last ? encodeCursor({ txid: last.cursorTxid, tiebreak: String(last.cursorTiebreak) }) : (request.cursor ?? null),
    hasMore,
  };
}
