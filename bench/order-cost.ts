/**
 * What an action's `order` costs the database a task: the forwarder's claim and finish alone (no HTTP, no worker
 * around them), draining `--tasks` pending tasks of one action, once with `order` in mode `sequence` over `--keys`
 * keys and once without, in turn. The figure is the CPU of the database's own backend (Linux's /proc) over the drain
 * ÷ the tasks, the claim's and the finish's apart: WAL writing and autovacuum are not in it. Beside it the buffers a
 * task, the server's own count for the database: they repeat from one drain to the next where the CPU swings with
 * the machine.
 *
 *   npx tsx bench/order-cost.ts                       # 20,000 tasks over 1,000 keys, two rounds
 *   npx tsx bench/order-cost.ts --keys 100 --rounds 4
 *
 * Each drain fills a fresh scratch database (`oncehook_order_cost_<pid>`, dropped at the end) with rows written directly,
 * the hold trigger placing the ordered ones, then claims 64 at a time and finishes them as succeeded on one
 * connection.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { sql } from 'drizzle-orm';
import { claimTasks, type ClaimRoute } from '../src/store/atomic/claim.ts';
import { finishAttempts } from '../src/store/atomic/finish.ts';
import { openStore } from '../src/store/connect.ts';
import { migratePostgresAt } from '../src/store/migrate.ts';
import { rowsOf } from '../src/store/rows.ts';
import { finishOf } from '../test/support/finishes.ts';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '20000' },
    keys: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '2' },
    'pg-url': { type: 'string', default: process.env.ONCEHOOK_BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432/postgres' },
  },
});
const TASKS = Number(values.tasks);
const KEYS = Number(values.keys);
// The process's own: two runs at once on one server would otherwise drop each other's database mid-drain.
const NAME = `oncehook_order_cost_${process.pid}`;
const BATCH = 64;
const OWNER = 'order-cost';
const ROUTE: ClaimRoute = {
  source: 'shop',
  action: 'crm',
  destination: 'http://127.0.0.1:9',
  lookupDestination: null,
  keyed: true,
  keyRetentionMs: 86_400_000,
  lookup: false,
  maxAttempts: 5,
  leaseMs: 60_000,
};

/** The CPU a process has used, in µs (utime + stime, in clock ticks of 10 ms). */
function cpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

interface Drain {
  perSecond: number;
  /** µs of the backend's CPU a task. */
  claim: number;
  finish: number;
  buffers: number;
}

/** The buffers the database's backends have read or found in memory so far, this connection's own flushed first. */
async function buffersOf(db: Awaited<ReturnType<typeof openStore>>['db']): Promise<number> {
  await db.execute(sql`select pg_stat_force_next_flush()`);
  const [row] = await rowsOf<{ n: string }>(db, sql`select (blks_hit + blks_read)::text as n from pg_stat_database where datname = current_database()`);
  return Number(row!.n);
}

async function drain(ordered: boolean): Promise<Drain> {
  const admin = postgres(values['pg-url'], { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists ${NAME} with (force)`);
  await admin.unsafe(`create database ${NAME}`);
  const url = new URL(values['pg-url']);
  url.pathname = `/${NAME}`;
  await migratePostgresAt(url.toString());
  const store = await openStore({ databaseUrl: url.toString(), poolSize: 1 });
  try {
    await store.db.execute(sql`insert into tasks (id, source, action, event_id, delivery_id, state, body, body_sha256, order_key, order_mode)
      select 't' || i, ${ROUTE.source}, ${ROUTE.action}, 'e' || i, 'd' || i, 'pending', convert_to(repeat('x', 500), 'UTF8'), '',
        case when ${ordered} then 'k' || (i % ${KEYS}) end, case when ${ordered} then 'sequence' end
      from generate_series(1, ${TASKS}) i`);
    await store.db.execute(sql`vacuum analyze tasks`);
    const [{ pid }] = (await rowsOf<{ pid: number }>(store.db, sql`select pg_backend_pid() as pid`)) as [{ pid: number }];
    const buffersBefore = await buffersOf(store.db);
    let claimed = 0;
    let finished = 0;
    let done = 0;
    const started = performance.now();
    for (;;) {
      let before = cpuUs(pid);
      const { tasks } = await claimTasks(store.db, { owner: OWNER, routes: [ROUTE], limit: BATCH });
      claimed += cpuUs(pid) - before;
      if (tasks.length === 0) break;
      before = cpuUs(pid);
      await finishAttempts(store.db, tasks.map((task) => finishOf(task, OWNER)));
      finished += cpuUs(pid) - before;
      done += tasks.length;
    }
    const buffers = (await buffersOf(store.db)) - buffersBefore;
    if (done !== TASKS) throw new Error(`${done} of ${TASKS} tasks finished: a key was left held`);
    const perTask = (us: number) => Math.round(us / done);
    return { perSecond: Math.round((done / (performance.now() - started)) * 1000), claim: perTask(claimed), finish: perTask(finished), buffers: perTask(buffers) };
  } finally {
    await store.close();
    await admin.unsafe(`drop database if exists ${NAME} with (force)`);
    await admin.end();
  }
}

console.log(`${TASKS.toLocaleString('en-US')} tasks, ordered over ${KEYS.toLocaleString('en-US')} keys or not; the database's CPU a task`);
for (let round = 0; round < Number(values.rounds); round++) {
  // In turn, the other one first each round.
  const drains = new Map<boolean, Drain>();
  for (const ordered of round % 2 === 0 ? [false, true] : [true, false]) drains.set(ordered, await drain(ordered));
  const [unordered, ordered] = [drains.get(false)!, drains.get(true)!];
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
  const line = (name: string, d: Drain) => `${name} ${d.claim + d.finish} µs (claim ${d.claim}, finish ${d.finish}), ${d.buffers} buffers, ${d.perSecond.toLocaleString('en-US')}/s`;
  const extra = ordered.claim + ordered.finish - unordered.claim - unordered.finish;
  console.log(`round ${round + 1} (load ${load}): ${line('unordered', unordered)}; ${line('ordered', ordered)}; ordered ${extra >= 0 ? '+' : ''}${extra} µs`);
}
