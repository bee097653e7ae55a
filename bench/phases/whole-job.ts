/**
 * The whole job: one gateway process receiving the ingest load and forwarding what it accepts, in the
 * same process, to the same downstream — oncehook as `npm start` runs it, on PostgreSQL, against the gateway a
 * developer would write instead (Hono + pg-boss, bench/peer/), then oncehook again on embedded PGlite. What counts
 * is what reached the downstream while the load ran, not what was accepted: a backlog left behind is not done.
 */
import { BENCH_SECRET } from '../deliveries.ts';
import { runLoad } from '../load/run.ts';
import { startPeer } from '../peer/start.ts';
import { freshDatabase } from '../postgres.ts';
import { CpuWatch, RssSampler, type CpuShares } from '../proc.ts';
import { startDownstream, type Downstream, type DownstreamStats } from '../servers/start.ts';
import { progressLine, type Context, type PeerSettings, type WholeJobResult, type WholeJobRun } from './context.ts';
import { awaitForwarded, withEmbeddedGateway } from './embedded-world.ts';
import { closedLoop, decidedAsSent } from './load-spec.ts';
import { withSession } from './session.ts';

/** pg-boss's floor: it will not poll more often (see bench/pgboss/runner.ts). */
const PEER_POLLING_SECONDS = 0.5;

export async function runWholeJob(ctx: Context): Promise<WholeJobResult> {
  // As `npm start` runs it: serve's own number of attempts in flight unless the run asks for another.
  const concurrency = ctx.options.wholeJobConcurrency ?? null;
  const oncehook = await withSession(ctx, 'whole-job', async (session) => {
    const gateway = await session.start('all', 'oncehook whole job', concurrency);
    return measure(ctx, { gateway: 'oncehook', engine: 'PostgreSQL', label: 'whole-job-oncehook', url: gateway.url, pid: gateway.child.pid }, session.downstream);
  });
  const { peer, peerSettings } = await runPeer(ctx);
  const embedded = await withEmbeddedGateway(
    ctx,
    'whole-job-embedded',
    ({ gateway, downstream }) => measure(ctx, { gateway: 'oncehook', engine: 'embedded PGlite', label: 'whole-job-embedded', url: gateway.url, pid: gateway.child.pid }, downstream),
    concurrency ?? undefined,
  );
  return { oncehook, peer, embedded, peerSettings, concurrency };
}

async function runPeer(ctx: Context): Promise<{ peer: WholeJobRun; peerSettings: PeerSettings }> {
  const { options } = ctx;
  const database = await freshDatabase(options.pgUrl, 'whole_job_peer', ctx.cleanup);
  const downstream = await startDownstream(ctx.cleanup);
  try {
    const tuning = {
      // A connection for each client sending at once and for each worker, as (c) tunes pg-boss.
      poolMax: options.concurrency + options.bossWorkers + 2,
      batchSize: options.bossBatchSize,
      workers: options.bossWorkers,
      pollingIntervalSeconds: PEER_POLLING_SECONDS,
      connections: options.workerConcurrency,
    };
    const running = await startPeer({ databaseUrl: database.url, downstreamOrigin: downstream.origin, secret: BENCH_SECRET, ...tuning }, ctx.cleanup);
    try {
      const peer = await measure(ctx, { gateway: 'Hono + pg-boss', engine: 'PostgreSQL', label: 'whole-job-peer', url: running.url, pid: running.child.pid }, downstream);
      return { peer, peerSettings: { version: running.version, ...tuning } };
    } finally {
      await running.stop();
    }
  } finally {
    await downstream.stop();
    await database.drop();
  }
}

type Target = Pick<WholeJobRun, 'gateway' | 'engine'> & { label: string; url: string; pid: number };

async function measure(ctx: Context, target: Target, downstream: Downstream): Promise<WholeJobRun> {
  const name = `${target.gateway} on ${target.engine}`;
  ctx.say(`${name}…`);
  const rss = new RssSampler(target.pid, 500);
  const watch = new CpuWatch({ gateway: target.pid, downstream: downstream.child.pid });
  let cpu: CpuShares | null = null;
  let opened: Promise<DownstreamStats> | undefined;
  let closed: Promise<DownstreamStats> | undefined;
  const before = (await downstream.stats()).received;
  const load = await runLoad(closedLoop(ctx, { label: target.label, origin: target.url }), ctx.cleanup, {
    onProgress: (p) => ctx.say(`${progressLine(p)}  (${name})`),
    onWindow: (edge) => {
      if (edge === 'start') {
        watch.start();
        opened = downstream.stats();
      } else {
        cpu = watch.stop();
        closed = downstream.stats();
      }
    },
  });
  if (!opened || !closed) throw new Error(`the load against ${name} never opened and closed its window`);
  const forwardedInWindow = (await closed).received - (await opened).received;
  const accepted = load.decisions.accepted ?? 0;
  const { drainAfterMs } = await awaitForwarded(ctx, downstream, before, accepted);
  return {
    gateway: target.gateway,
    engine: target.engine,
    load,
    forwardedInWindow,
    forwardedPerSecond: (forwardedInWindow * 1000) / load.windowMs,
    decisionsAsExpected: decidedAsSent(load, target.gateway === 'oncehook' ? 'duplicate_delivery' : 'duplicate'),
    drainAfterMs,
    cpu,
    peakRssBytes: rss.stop(),
  };
}
