/**
 * pg-boss, set up the way a user tuning it for throughput would, in its own process: `send` one job per
 * delivery, then workers that fetch in batches and forward each job's body to the downstream.
 *
 * pg-boss 10 is the last major that runs on Node 20. It has no `localConcurrency` (11 added it); that option
 * starts several workers polling one queue, which is what `workers` separate `work()` registrations do here.
 */
import PgBoss from 'pg-boss';
import { createRequire } from 'node:module';
import { Pool } from 'undici';
import { exitWithParent } from '../children.ts';
import { orderBody } from '../deliveries.ts';
import { Samples } from '../histogram.ts';
import { wallNow } from '../servers/protocol.ts';
import { QUEUE, type BossCommand, type BossMessage, type BossSpec, type SendFigures } from './protocol.ts';

/**
 * pg-boss's floor: it refuses to poll more often than every half second, and a worker sleeps out the rest of
 * the interval even after a full batch. A worker therefore moves at most `batchSize` jobs per half second,
 * and throughput comes from large batches. Measured on the 2-core machine, concurrency 32, 5 s phases:
 * batchSize 100 × 4 workers 800/s (the polling bound, exactly), 1000 × 2 4,100/s, 1000 × 4 4,800/s,
 * 1000 × 8 2,400/s (more workers contend on one queue), 2000 × 4 7,600/s: the defaults.
 */
const POLLING_INTERVAL_SECONDS = 0.5;

interface Job {
  eventId: string;
  /** The raw body, forwarded byte for byte, as oncehook forwards the bytes it stored. */
  body: string;
}

const say = (message: BossMessage) => process.send!(message);
let boss: PgBoss | undefined;
let pool: Pool | undefined;
let spec: BossSpec | undefined;

exitWithParent();
process.on('message', (command: BossCommand) => {
  handle(command).catch((error: unknown) => say({ type: 'failed', message: (error as Error).stack ?? String(error) }));
});
process.once('SIGTERM', () => {
  void Promise.allSettled([boss?.stop({ graceful: false, wait: true }), pool?.close()]).finally(() => process.exit(0));
});

async function handle(command: BossCommand): Promise<void> {
  if (command.type === 'send') {
    spec = command.spec;
    say({ type: 'sent', figures: await sendPhase(spec) });
  } else if (command.type === 'work') {
    await startWorkers(spec!);
    say({ type: 'working' });
  } else {
    const sentAt = wallNow();
    await boss!.send(QUEUE, { eventId: command.marker, body: orderBody(command.marker, spec!.bodyBytes, command.marker) } satisfies Job);
    say({ type: 'probed', sentAt });
  }
}

async function sendPhase(s: BossSpec): Promise<SendFigures> {
  // One connection per sender and per worker, so neither waits on the pool: pg-boss's default is 10.
  const poolMax = s.concurrency + s.workers + 2;
  boss = new PgBoss({
    connectionString: s.databaseUrl,
    max: poolMax,
    application_name: 'bench-pgboss',
    // Nothing here is scheduled or needs maintenance within a run; their timers would only add noise.
    supervise: false,
    schedule: false,
  });
  boss.on('error', (error) => console.error(`pg-boss: ${error.message}`));
  await boss.start();
  await boss.createQueue(QUEUE);

  // The same payloads the gateway receives, built before the clock starts and reused: pg-boss does not deduplicate.
  const payloads: Job[] = Array.from({ length: 10_000 }, (_, i) => ({ eventId: String(i), body: orderBody(String(i), s.bodyBytes) }));
  const samples = new Samples();
  let sent = 0;
  let errors = 0;
  const started = performance.now();
  const windowStart = started + s.warmupMs;
  const end = windowStart + s.durationMs;
  let interval = 0;
  let progress: NodeJS.Timeout | undefined;
  const opened = setTimeout(() => {
    progress = setInterval(() => {
      say({ type: 'progress', line: `${((performance.now() - windowStart) / 1000).toFixed(0).padStart(4)} s  ${Math.round((interval * 1000) / s.progressMs).toLocaleString('en-US').padStart(7)} sends/s` });
      interval = 0;
    }, s.progressMs);
  }, s.warmupMs);
  await Promise.all(
    Array.from({ length: s.concurrency }, async () => {
      while (performance.now() < end) {
        const payload = payloads[sent++ % payloads.length]!;
        const sentAt = performance.now();
        try {
          await boss!.send(QUEUE, payload);
        } catch {
          errors++;
        }
        const doneAt = performance.now();
        if (doneAt >= windowStart && doneAt <= end) {
          samples.add(doneAt - sentAt);
          interval++;
        }
      }
    }),
  );
  clearTimeout(opened);
  clearInterval(progress);
  return {
    perSecond: (samples.count * 1000) / s.durationMs,
    latencyMs: samples.summary(),
    errors,
    backlog: sent - errors,
    poolMax,
    pollingIntervalSeconds: POLLING_INTERVAL_SECONDS,
    version: (createRequire(import.meta.url)('pg-boss/package.json') as { version: string }).version,
  };
}

async function startWorkers(s: BossSpec): Promise<void> {
  pool = new Pool(s.downstreamOrigin, { connections: s.concurrency });
  const forward = async (job: PgBoss.Job<Job>) => {
    const response = await pool!.request({
      path: '/crm',
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': job.id },
      body: job.data.body,
    });
    await response.body.dump();
    if (response.statusCode >= 300) throw new Error(`downstream answered ${response.statusCode}`);
  };
  for (let i = 0; i < s.workers; i++) {
    await boss!.work<Job>(QUEUE, { batchSize: s.batchSize, pollingIntervalSeconds: POLLING_INTERVAL_SECONDS }, async (jobs) => {
      await Promise.all(jobs.map(forward));
    });
  }
}
