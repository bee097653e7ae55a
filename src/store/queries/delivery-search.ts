import { sql, type SQL } from 'drizzle-orm';
import { bodyPathPredicate } from '../../shape/filter-index.ts';
import { matchFilter, type Filter } from '../../shape/filter.ts';
import type { Db } from '../connect.ts';
import { rowsOf } from '../rows.ts';
import { columns, withDates, type DeliveryFilter, type DeliveryRow } from './deliveries.ts';
import { encodeCursor, otherDatabasesXids, pageClauses, type Page, type PageRequest } from './cursor.ts';

/**
 * A page of a content search, which may end before the page is full: `partial` when it stopped at its bound of
 * receipts read, so that more may match after `nextCursor`, which then points past the last receipt read.
 */
export type SearchPage = Page<DeliveryRow> & { partial: boolean };

/**
 * Receipts read at most for one page, and their bytes: a filter the index cannot narrow is checked receipt by
 * receipt, newest first, and one request must not read the whole history.
 */
const SEARCH_READ_ROWS = 2000;
const SEARCH_READ_BYTES = 16 * 1024 * 1024;
const CHUNK_ROWS = 200;

interface Candidate extends DeliveryRow {
  cursorTxid: string;
  cursorTiebreak: string;
  body: Uint8Array;
  headers: Record<string, string> | null;
}

/**
 * The receipts whose kept bytes (delivery_bodies) match `match`, in the filter's syntax and by its rules, newest first
 * as the list is. The index over the body (delivery_bodies_json_idx) finds the candidates where the filter translates
 * to a jsonpath predicate (filter-index.ts), a topic that is a literal by its column; each candidate is then decided by
 * matchFilter itself. A duplicate_delivery keeps no bytes and is not found: its page names the receipt it repeats.
 */
export async function searchDeliveries(db: Db, filter: DeliveryFilter, match: Filter, request: PageRequest): Promise<SearchPage> {
  const narrowing = narrowingOf(match);
  const others = await otherDatabasesXids(db);
  const matched: Candidate[] = [];
  let cursor = request.cursor;
  let read = 0;
  let bytes = 0;
  let lastRead: Candidate | undefined;
  for (;;) {
    const chunk = Math.min(CHUNK_ROWS, SEARCH_READ_ROWS - read);
    const rows = await rowsOf<Candidate>(db, candidatesSql(filter, narrowing, { ...request, cursor, limit: chunk - 1 }, others));
    for (const row of rows) {
      read += 1;
      bytes += row.body.byteLength;
      lastRead = row;
      if (matchFilter(match, { body: parsed(row.body), headers: row.headers ?? {}, topic: row.topic }) === null) matched.push(row);
      if (matched.length > request.limit) break;
    }
    const exhausted = rows.length < chunk;
    if (matched.length > request.limit || exhausted) return pageOf(matched, request, null);
    if (read >= SEARCH_READ_ROWS || bytes >= SEARCH_READ_BYTES) return pageOf(matched, request, lastRead!);
    cursor = positionOf(lastRead!);
  }
}

function pageOf(matched: Candidate[], request: PageRequest, stoppedAt: Candidate | null): SearchPage {
  const items = matched.slice(0, request.limit);
  const last = stoppedAt ?? items[items.length - 1];
  return {
    items: items.map(({ cursorTxid: _t, cursorTiebreak: _k, body: _b, headers: _h, ...row }) => withDates(row)),
    nextCursor: last ? positionOf(last) : (request.cursor ?? null),
    hasMore: stoppedAt !== null || matched.length > request.limit,
    partial: stoppedAt !== null,
  };
}

const positionOf = (row: Candidate) => encodeCursor({ txid: row.cursorTxid, tiebreak: String(row.cursorTiebreak) });

/** What SQL can rule out before a body is read: the index's predicate on the body, a literal topic. */
function narrowingOf(match: Filter): SQL[] {
  const parts: SQL[] = [];
  const predicate = match.body === undefined ? null : bodyPathPredicate(match.body);
  if (predicate !== null) parts.push(sql`oncehook_body_json(b.body) @@ ${predicate}::jsonpath`);
  if (typeof match.topic === 'string') parts.push(sql`d.topic = ${match.topic}`);
  return parts;
}

/** One chunk of candidates: `request.limit + 1` of them after `request.cursor`, with their bytes and headers. */
export function candidatesSql(filter: DeliveryFilter, narrowing: SQL[], request: PageRequest, others: readonly string[]): SQL {
  const page = pageClauses(request, sql`d.txid`, sql`d.seq`, 'bigint', others);
  const where = [page.where, ...narrowing];
  if (filter.source !== undefined) where.push(sql`d.source = ${filter.source}`);
  if (filter.decision !== undefined) where.push(sql`d.decision = ${filter.decision}`);
  if (filter.eventId !== undefined) where.push(sql`d.event_id = ${filter.eventId}`);
  if (filter.deliveryId !== undefined) where.push(sql`d.delivery_id = ${filter.deliveryId}`);
  return sql`select ${columns}, d.txid::text as "cursorTxid", d.seq::text as "cursorTiebreak", b.body,
        coalesce(d.headers, h.headers) as headers
      from deliveries d join delivery_bodies b on b.delivery_id = d.id left join deliveries h on h.id = d.headers_from
      where ${sql.join(where, sql` and `)}
      order by ${page.orderBy} limit ${page.limit}`;
}

/** The body as the filter reads it: its JSON, or, for a body that is not JSON, its text. */
function parsed(body: Uint8Array): unknown {
  const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
