import { sql } from 'drizzle-orm';
import type { Db } from '../../src/store/connect.ts';
import { inList } from '../../src/store/queries/task-filter.ts';
import { rowsOf } from '../../src/store/rows.ts';
import type { adminApi } from './admin.ts';
import type { Downstream } from './downstream.ts';

/** What keeps an action from a second effect when an outcome is unknown: its key, its lookup, or a person. */
export type Safeguard = 'key' | 'lookup' | 'none';

export interface WatchedAction {
  /** The downstream path the action posts to. */
  path: string;
  safeguard: Safeguard;
}

/** One action for each safeguard, each made by its own topic: what the fault tests watch. */
export const EACH_SAFEGUARD: readonly (WatchedAction & { topic: string })[] = [
  { path: '/keyed', safeguard: 'key', topic: 'orders/create' },
  { path: '/looked', safeguard: 'lookup', topic: 'orders/updated' },
  { path: '/plain', safeguard: 'none', topic: 'orders/paid' },
];

/** A 2xx the gateway gave: a promise that the receipt, and the tasks it named, are durable. */
export interface Answered {
  receipt: string;
  decision: string;
  tasks: string[];
}

const STATES = ['awaiting_approval', 'pending', 'in_progress', 'succeeded', 'outcome_unknown', 'needs_review', 'failed', 'cancelled'];
export const SETTLED = ['succeeded', 'failed', 'needs_review', 'cancelled'];

/** A list of IDs as one parameter, read the same way by both engines. */
export const idsIn = (ids: readonly string[]) => sql`(select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))`;

const count = <T>(items: T[], key: (item: T) => string | undefined) => {
  const counts = new Map<string, number>();
  for (const item of items) {
    const k = key(item);
    if (k !== undefined) counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return counts;
};

/**
 * The invariants that hold at every moment, a crash included, as violations (empty: all hold): every 2xx is
 * durable with the decision it announced; nothing is half-written; every task is in exactly one known state,
 * with a lease exactly when in progress; no action with a key or a lookup has a second effect; and no action
 * with neither was sent a task twice — any second send would be a resend of an ambiguous attempt, because
 * this downstream answers every request it reads with a 2xx or not at all.
 */
export async function violations(db: Db, downstream: Downstream, answered: Answered[], actions: readonly WatchedAction[]): Promise<string[]> {
  const found: string[] = [];
  const receipts = answered.map((a) => a.receipt);
  const stored = new Map(
    (await rowsOf<{ id: string; decision: string }>(db, sql`select id, decision from deliveries where id in ${idsIn(receipts)}`)).map((r) => [
      r.id,
      r.decision,
    ]),
  );
  const named = answered.flatMap((a) => a.tasks);
  const tasks = new Set((await rowsOf<{ id: string }>(db, sql`select id from tasks where id in ${idsIn(named)}`)).map((r) => r.id));
  for (const a of answered) {
    if (!stored.has(a.receipt)) found.push(`receipt ${a.receipt} was answered ${a.decision} but is not stored`);
    else if (stored.get(a.receipt) !== a.decision) found.push(`receipt ${a.receipt} was answered ${a.decision} but is stored as ${stored.get(a.receipt)}`);
    for (const id of a.tasks) if (!tasks.has(id)) found.push(`task ${id} was announced by ${a.receipt} but does not exist`);
  }

  const [whole] = await rowsOf<{ keys: number; events: number; orphan_tasks: number; accepted_empty: number }>(
    db,
    sql`
    select
      (select count(*)::int from delivery_keys k where not exists (select 1 from deliveries d where d.id = k.first_delivery)) as keys,
      (select count(*)::int from event_keys k where not exists (select 1 from deliveries d where d.id = k.first_delivery)) as events,
      (select count(*)::int from tasks t where not exists (select 1 from deliveries d where d.id = t.delivery_id)) as orphan_tasks,
      (select count(*)::int from deliveries d where d.decision = 'accepted'
         and not exists (select 1 from tasks t where t.delivery_id = d.id)) as accepted_empty`,
  );
  for (const [what, n] of Object.entries(whole!)) if (n > 0) found.push(`half-written: ${n} ${what}`);

  const rows = await rowsOf<{ id: string; state: string; leased: boolean; open: number }>(
    db,
    sql`select t.id, t.state, (t.lease_owner is not null and t.lease_expires_at is not null) as leased,
      (select count(*)::int from attempts a where a.task_id = t.id and a.finished_at is null) as open
    from tasks t`,
  );
  for (const row of rows) {
    if (!STATES.includes(row.state)) found.push(`task ${row.id} is in an unknown state ${row.state}`);
    if (row.leased !== (row.state === 'in_progress')) found.push(`task ${row.id} is ${row.state} with${row.leased ? '' : 'out'} a lease`);
    if (row.open > (row.state === 'in_progress' ? 1 : 0)) found.push(`task ${row.id} is ${row.state} with ${row.open} open attempts`);
  }

  for (const { path, safeguard } of actions) {
    const counted =
      safeguard === 'none'
        ? count(downstream.requests(path).filter((r) => r.method === 'POST'), (r) => r.headers['idempotency-key'])
        : count(downstream.effects(path), (e) => e.key);
    for (const [key, n] of counted) {
      if (n > 1) found.push(safeguard === 'none' ? `${path}: task ${key} was sent ${n} times without a key or lookup` : `${path}: task ${key} has ${n} effects`);
    }
  }
  return found;
}

/** Once every task has settled: each one with a key or lookup has exactly one effect; the rest at most one, or a person decides. */
export async function settledViolations(db: Db, downstream: Downstream, actions: readonly WatchedAction[]): Promise<string[]> {
  const found: string[] = [];
  const rows = await rowsOf<{ id: string; action: string; state: string }>(db, sql`select id, action, state from tasks`);
  for (const { path, safeguard } of actions) {
    const action = path.slice(1);
    const effects = count(downstream.effects(path), (e) => e.key);
    for (const row of rows.filter((r) => r.action === action)) {
      if (!SETTLED.includes(row.state)) found.push(`task ${row.id} has not settled: ${row.state}`);
      else if (safeguard !== 'none' && (row.state !== 'succeeded' || effects.get(row.id) !== 1)) {
        found.push(`${path}: task ${row.id} ended ${row.state} with ${effects.get(row.id) ?? 0} effects`);
      } else if (safeguard === 'none' && !['succeeded', 'needs_review'].includes(row.state)) {
        found.push(`${path}: task ${row.id} ended ${row.state}`);
      }
    }
  }
  return found;
}

/** Whether every task has settled. */
export async function allSettled(db: Db): Promise<boolean> {
  const [row] = await rowsOf<{ n: number }>(db, sql`select count(*)::int as n from tasks where state not in ${inList(SETTLED)}`);
  return row!.n === 0;
}

/**
 * How many tasks a running gateway's `/api/stats` counts as not settled: how to watch an embedded gateway,
 * whose store only it may open.
 */
export async function unsettledInStats(api: ReturnType<typeof adminApi>): Promise<number> {
  const { json } = await api('/api/stats');
  return (json.tasks as { state: string; count: number }[]).filter((s) => !SETTLED.includes(s.state)).reduce((n, s) => n + s.count, 0);
}
