/**
 * The worker's own CPU a task: one Forwarder in this process drains a backlog of pending tasks to the bench's local
 * downstream (a process of its own), and this process's CPU (`process.cpuUsage`) over the drain ÷ the tasks is the
 * figure. PostgreSQL's and the downstream's CPU are not in it. Then each part of a task's path, alone, in a loop.
 *
 *   npx tsx bench/worker-cost.ts                      # 20,000 tasks, three drains, PostgreSQL at 127.0.0.1:5432
 *   npx tsx bench/worker-cost.ts --tasks 5000 --rounds 1
 *   npx tsx bench/worker-cost.ts --from .          # this checkout's forwarder bundled as the build bundles it
 *   npx tsx bench/worker-cost.ts --from . --against ../before --rounds 6   # two checkouts, bundled, drain by drain
 *   npx tsx bench/worker-cost.ts --profile /tmp/drain.cpuprofile   # a CPU profile of the drains alone
 *
 * Each drain fills a scratch database (`oncehook_worker_cost_<pid>`, dropped at the end) with `--tasks` tasks through the
 * ingest function, then times the drain alone. Logs go to /dev/null through the gateway's own logger, so the log
 * lines are paid as in production.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../src/store/rows.ts';
import { Cleanup } from './cleanup.ts';
import { openScratch } from './scratch.ts';
import { startDownstream } from './servers/start.ts';
import { bundleWorkerModules, partCosts, partsConfig, workerModules, type WorkerModules } from './worker-parts.ts';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '256' },
    'body-bytes': { type: 'string', default: '1024' },
    'pg-url': { type: 'string', default: process.env.ONCEHOOK_BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432/postgres' },
    parts: { type: 'boolean', default: true },
    profile: { type: 'string' },
    from: { type: 'string' },
    against: { type: 'string' },
  },
  allowNegative: true,
});
const tasks = Number(values.tasks);
const rounds = Number(values.rounds);
const concurrency = Number(values.concurrency);
const bodyBytes = Number(values['body-bytes']);

/** Each task's body: JSON of `--body-bytes`. */
const body = JSON.stringify({ id: 0, note: 'x'.repeat(Math.max(0, bodyBytes - 20)) });

/** Fills the scratch database with `n` pending tasks through ingest's own function, 500 receipts a statement. */
async function fill(db: Awaited<ReturnType<typeof openScratch>>['store']['db'], n: number, run: string): Promise<void> {
  for (let from = 0; from < n; from += 500) {
    const size = Math.min(500, n - from);
    await db.execute(sql`select oncehook_record_deliveries((
      select json_agg(json_build_object('i', g, 'id', 'r_' || ${run}::text || '_' || g, 'source', 'shop',
        'delivery_id', 'd_' || ${run}::text || '_' || g, 'event_id', 'e_' || ${run}::text || '_' || g, 'topic', 'orders/create',
        'occurred_at', now(), 'headers', json_build_object('content-type', 'application/json'),
        'content_type', 'application/json', 'body', encode(convert_to(${body}::text, 'UTF8'), 'base64'),
        'body_sha256', md5(${run}::text || g), 'body_bytes', ${body.length}::int,
        'tasks', json_build_array(json_build_object('id', 't_' || ${run}::text || '_' || g, 'action', 'crm',
          'state', 'pending', 'after_task_id', NULL))) ORDER BY g)
      from generate_series(${from}::int, ${from + size - 1}::int) g), 'oncehook_bench')`);
  }
}


/** One drain: its CPU a task, in µs. */
async function drain(m: WorkerModules, config: ReturnType<WorkerModules['configSchema']['parse']>, label: string, cleanup: Cleanup, profiler: Session | null): Promise<number> {
  // The process's own, as two runs at once would drop each other's.
  const scratch = await openScratch(`oncehook_worker_cost_${process.pid}`, { pgUrl: values['pg-url'] });
  const dropped = cleanup.add('scratch database', () => scratch.close());
  const { store } = scratch;
  await fill(store.db, tasks, 'w');
  await store.db.execute(sql`vacuum analyze tasks`);
  const logger = m.createLogger('info', pino.destination({ dest: '/dev/null', sync: false, minLength: 4096 }));
  const forwarder = new m.Forwarder({ config, store, logger, metrics: m.createMetrics() }, { concurrency });
  await profiler?.post('Profiler.start');
  const wall = performance.now();
  const cpu = process.cpuUsage();
  await forwarder.start();
  forwarder.wake();
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const [row] = await rowsOf<{ n: number }>(store.db, sql`select count(*)::int as n from tasks where state = 'succeeded'`);
    if ((row?.n ?? 0) >= tasks) break;
  }
  const used = process.cpuUsage(cpu);
  const wallMs = performance.now() - wall;
  if (profiler) profiles.push((await profiler.post('Profiler.stop')).profile);
  await forwarder.stop();
  dropped();
  await scratch.close();
  const us = (used.user + used.system) / tasks;
  console.log(
    `${label}: ${tasks} tasks in ${(wallMs / 1000).toFixed(2)} s (${Math.round((tasks * 1000) / wallMs)}/s), ` +
      `worker CPU ${us.toFixed(1)} µs a task (user ${(used.user / tasks).toFixed(1)}, system ${(used.system / tasks).toFixed(1)})`,
  );
  return us;
}

const profiles: object[] = [];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const range = (xs: number[]) => `${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)}`;

async function main(): Promise<void> {
  const m = await workerModules(values.from === undefined ? undefined : await bundleWorkerModules(values.from));
  // A second build, drained in turn with the first in this one process: the machine's load, and the JIT's work on the
  // modules both share, fall on both alike.
  const other = values.against === undefined ? null : await workerModules(await bundleWorkerModules(values.against));
  const cleanup = new Cleanup();
  cleanup.onSignals();
  try {
    const downstream = await startDownstream(cleanup);
    const config = partsConfig(m, downstream.origin);
    const profiler = values.profile === undefined ? null : new Session();
    if (profiler) {
      profiler.connect();
      await profiler.post('Profiler.enable');
    }
    const perTask: number[] = [];
    const againstPerTask: number[] = [];
    for (let round = 0; round < rounds; round++) {
      // Which build goes first alternates too.
      const turns: ('from' | 'against')[] = other === null ? ['from'] : round % 2 === 0 ? ['from', 'against'] : ['against', 'from'];
      for (const turn of turns) {
        if (turn === 'from') perTask.push(await drain(m, config, `drain ${round + 1}`, cleanup, profiler));
        else againstPerTask.push(await drain(other!, config, `drain ${round + 1}, --against`, cleanup, null));
      }
    }
    // The last drain's: the first ran before the code was warm.
    if (values.profile !== undefined) writeFileSync(values.profile, JSON.stringify(profiles.at(-1)));
    if (values.parts) {
      console.log(`each part alone, µs of CPU a task (the median of five loops)${other ? ', and --against' : ''}:`);
      const parts = await partCosts(m, downstream.origin, body);
      const againstParts = other ? await partCosts(other, downstream.origin, body) : null;
      parts.forEach(([part, us], i) => console.log(`  ${part.padEnd(48)} ${us.toFixed(1).padStart(6)}${againstParts ? againstParts[i]![1].toFixed(1).padStart(8) : ''}`));
    }
    console.log(`worker CPU a task: median ${median(perTask).toFixed(1)} µs, range ${range(perTask)}`);
    if (other) {
      const ratios = perTask.map((us, i) => us / againstPerTask[i]!);
      console.log(`against ${values.against}: median ${median(againstPerTask).toFixed(1)} µs, range ${range(againstPerTask)}; drain by drain ${median(ratios).toFixed(2)}× it (${range(ratios)})`);
    }
  } finally {
    await cleanup.run();
  }
}

await main();
