import { sql, type SQL } from 'drizzle-orm';
import type { OutcomeRule } from '../atomic/claim.ts';
import type { Db } from '../connect.ts';
import { rowsOf } from '../rows.ts';
import { inList } from './task-filter.ts';

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

/** How much of its limits an origin uses now, and how many tasks wait to be sent to it. */
export interface DestinationUse {
  /** Requests to it in progress (sends and lookups), from every worker of every instance. */
  inFlight: number;
  /** The tokens its bucket holds now, refilled for the time since it was last drawn on; null without a rateLimit. */
  tokens: number | null;
  /** Tasks due now of the actions that send to it, not yet claimed: held by a limit, a pause, or simply queued. */
  waiting: number;
  /**
   * Unknown outcomes due now of the actions whose lookups it answers, whose claim would ask it (not a keyed resend,
   * not review): held by a limit, a pause or a cooldown of it, or simply queued.
   */
  waitingLookups: number;
}

/**
 * Each origin's use. `routes`: the configured actions as `source:action`, by the origin they send to; `lookups`: those
 * with a lookup, by the origin it asks, with what decides whether a claim asks it (oncehook_unknown_outcome_mode, as
 * the claim decides); `rates`: the origins with a rateLimit, with it. One statement, so the figures are of one moment.
 *
 * The due tasks are counted once, by action (with, among them, the unknown outcomes whose claim would ask the lookup),
 * and summed per origin: counted per origin in a subquery each, every
 * due task was read once per origin, and the estimate that made set off JIT compilation (1.95 s per call with
 * 200,000 due tasks among 1.2 million and three origins, 1.3 s of it compiling; 0.09 s counted once). JIT is off for
 * it: the count is a pass over the due index, which compiling never pays back on a page a person opens.
 */
export async function destinationUse(
  db: Pick<Db, 'transaction'>,
  routes: { origin: string; route: string }[],
  lookups: ({ origin: string; route: string } & OutcomeRule)[],
  rates: { origin: string; perSecond: number; burst: number }[],
): Promise<Map<string, DestinationUse>> {
  const rows = await db.transaction(async (tx) => {
    await tx.execute(sql`select set_config('jit', 'off', true)`);
    type Row = { origin: string; inFlight: number; tokens: number | null; waiting: number; waitingLookups: number };
    return rowsOf<Row>(tx, destinationUseSql(routes, lookups, rates));
  });
  return new Map(rows.map(({ origin, ...use }) => [origin, { ...use, tokens: use.tokens === null ? null : Number(use.tokens) }]));
}

export function destinationUseSql(
  routes: readonly { origin: string; route: string }[],
  lookups: readonly ({ origin: string; route: string } & OutcomeRule)[],
  rates: readonly { origin: string; perSecond: number; burst: number }[],
): SQL {
  return sql`with r as (select * from jsonb_to_recordset(${JSON.stringify(routes)}::jsonb) as r(origin text, route text)),
      l as (select * from jsonb_to_recordset(${JSON.stringify(rates)}::jsonb) as l(origin text, "perSecond" float8, burst int)),
      q as (select * from jsonb_to_recordset(${JSON.stringify(lookups)}::jsonb)
        as q(origin text, route text, keyed boolean, "keyRetentionMs" bigint, lookup boolean, "maxAttempts" int)),
      due as materialized (
        select t.source || ':' || t.action as route, count(*) as n,
          count(*) filter (where t.state = 'outcome_unknown' and oncehook_unknown_outcome_mode(q.keyed, q."keyRetentionMs",
            q.lookup, q."maxAttempts", t.attempts, t.lookups, t.first_attempt_at) = 'lookup') as asks
        from tasks t left join q on q.route = t.source || ':' || t.action
        where t.state in ('pending', 'outcome_unknown') and t.next_attempt_at <= now()
        group by 1),
      origins as (select origin from r union select origin from q union select origin from l union
        select request_origin from tasks where state = 'in_progress' and request_origin is not null)
      select o.origin,
        (select count(*) from tasks t where t.state = 'in_progress' and t.request_origin = o.origin)::int as "inFlight",
        (select least(l.burst, coalesce(b.tokens + l."perSecond" * extract(epoch from now() - b.refilled_at), l.burst))
           from l left join destination_budgets b on b.origin = l.origin where l.origin = o.origin) as tokens,
        (select coalesce(sum(d.n), 0) from due d where d.route in (select route from r where r.origin = o.origin))::int as waiting,
        (select coalesce(sum(d.asks), 0) from due d where d.route in (select route from q where q.origin = o.origin))::int as "waitingLookups"
      from origins o`;
}

/**
 * Of the tasks `ids`, the unknown outcomes whose next claim would ask their action's lookup, as the claim decides it
 * (oncehook_unknown_outcome_mode, in database time). `rules`: the actions with a lookup, as `source/action`.
 */
export async function lookupsAsked(db: Pick<Db, 'execute'>, ids: readonly string[], rules: readonly LookupRule[]): Promise<string[]> {
  if (ids.length === 0 || rules.length === 0) return [];
  return (await rowsOf<{ id: string }>(db, lookupsAskedSql(ids, rules))).map((row) => row.id);
}

type LookupRule = { route: string } & OutcomeRule;

export function lookupsAskedSql(ids: readonly string[], rules: readonly LookupRule[]): SQL {
  return sql`select t.id from tasks t
    join jsonb_to_recordset(${JSON.stringify(rules)}::jsonb)
      as r(route text, keyed boolean, "keyRetentionMs" bigint, lookup boolean, "maxAttempts" int) on r.route = t.source || '/' || t.action
    where t.id in ${inList(ids)} and t.state = 'outcome_unknown'
      and oncehook_unknown_outcome_mode(r.keyed, r."keyRetentionMs", r.lookup, r."maxAttempts", t.attempts, t.lookups,
        t.first_attempt_at) = 'lookup'`;
}
