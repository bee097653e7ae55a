import { readFileSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import type { Db } from '../connect.ts';
import { rowsOf } from '../rows.ts';

/** The migrations this build ships: drizzle-kit's journal beside the SQL (copied into dist by the build). */
const shipped = (): number =>
  (JSON.parse(readFileSync(new URL('../migrations/meta/_journal.json', import.meta.url), 'utf8')) as { entries: unknown[] })
    .entries.length;

/**
 * A live worker reclaims an expired lease on its next look at the queue (every `pollMs`, 2 s by default).
 * A lease expired for longer than this means no worker anywhere is looking: the queue has stalled.
 */
const STALL_SECONDS = 60;

export interface Readiness {
  migrations: { applied: number; shipped: number };
  /** Leases expired for over a minute and not reclaimed: evidence that no worker is alive. */
  stalledLeases: number;
}

/** What readiness reads from the database. Throws when the database cannot be reached. */
export async function readiness(db: Db): Promise<Readiness> {
  const [row] = await rowsOf<{ applied: number; stalled: number }>(
    db,
    sql`select (select count(*)::int from drizzle.__drizzle_migrations) as applied,
          (select count(*)::int from tasks where state = 'in_progress'
             and lease_expires_at < now() - ${STALL_SECONDS} * interval '1 second') as stalled`,
  );
  return { migrations: { applied: row?.applied ?? 0, shipped: shipped() }, stalledLeases: row?.stalled ?? 0 };
}
