import { sql } from 'drizzle-orm';
import type { Db } from './connect.ts';
import { rowsOf } from './rows.ts';

/** How often a process says it is alive; one silent for three of these is no longer counted live. */
export const INSTANCE_BEAT_MS = 10_000;
const LIVE_MS = 3 * INSTANCE_BEAT_MS;

export interface Instance {
  id: string;
  host: string;
  pid: number;
  role: string;
  configVersion: string;
}

export interface LiveInstance extends Instance {
  startedAt: Date;
  seenAt: Date;
}

/** This process is alive and runs `configVersion`; the rows silent for a day go, so the table stays small. */
export async function announce(db: Db, instance: Instance, startedAt: Date): Promise<void> {
  await db.execute(sql`
    with gone as (delete from instances where seen_at < now() - interval '1 day')
    insert into instances (id, host, pid, role, config_version, started_at, seen_at)
    values (${instance.id}, ${instance.host}, ${instance.pid}, ${instance.role}, ${instance.configVersion}, ${startedAt.toISOString()}, now())
    on conflict (id) do update set config_version = excluded.config_version, seen_at = now()`);
}

/** A process that stops says so: it is gone at once, not after it falls silent. */
export async function forget(db: Db, id: string): Promise<void> {
  await db.execute(sql`delete from instances where id = ${id}`);
}

/** The processes heard from lately, the longest running first. */
export function liveInstances(db: Db): Promise<LiveInstance[]> {
  return rowsOf<LiveInstance>(
    db,
    sql`select id, host, pid, role, config_version as "configVersion", started_at as "startedAt", seen_at as "seenAt"
        from instances where seen_at > now() - ${LIVE_MS} * interval '1 millisecond' order by started_at, id`,
  );
}
