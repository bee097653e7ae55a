import { sql } from 'drizzle-orm';
import type { Db } from '../connect.ts';
import { rowsOf } from '../rows.ts';

export interface DestinationRow {
  origin: string;
  cooldownUntil: Date | null;
  pausedAt: Date | null;
  pausedReason: string | null;
  updatedAt: Date;
}

/** Every destination with a standing on record: cooled down or paused at some point. */
export async function listDestinations(db: Db): Promise<DestinationRow[]> {
  const rows = await rowsOf<DestinationRow>(
    db,
    sql`select origin, cooldown_until as "cooldownUntil", paused_at as "pausedAt", paused_reason as "pausedReason",
          updated_at as "updatedAt"
        from destinations order by origin`,
  );
  const date = (value: Date | null) => (value === null ? null : new Date(value));
  return rows.map((row) => ({
    ...row,
    cooldownUntil: date(row.cooldownUntil),
    pausedAt: date(row.pausedAt),
    updatedAt: new Date(row.updatedAt),
  }));
}
