import { sql, type SQL } from 'drizzle-orm';

/**
 * The ordered keys (an action's `order`) of the tasks `t` in `from` that `moves` selects, locked in one order: a
 * statement that moves many tasks out of or back into their keys' order locks their keys before any row moves.
 * The triggers of migration 0025 would otherwise lock them row by row, in whatever order the rows are updated,
 * against a batch of ingest that locked them in this one; a finish's release (oncehook_order_release) reads its keys
 * under these locks and takes none of its own. A scalar subquery: a statement's WHERE that tests `locked >= 0` runs it
 * once, before the first row.
 */
export const orderKeysLocked = (from: SQL, moves: SQL): SQL => sql`(select count(pg_advisory_xact_lock(k.lock)) as locked from (
        select distinct oncehook_order_lock(t.source, t.action, t.order_key) as lock
        from ${from}
        where t.order_key is not null and ${moves}
        order by 1
      ) k)`;
