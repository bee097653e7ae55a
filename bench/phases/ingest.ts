/** (d) oncehook ingest: signed deliveries, new and replayed, against the real binary on a fresh database. */
import { runLoad } from '../load/run.ts';
import { CpuWatch, RssSampler, type CpuShares } from '../proc.ts';
import { progressLine, type Context, type IngestResult } from './context.ts';
import { closedLoop, decidedAsSent } from './load-spec.ts';
import { withSession } from './session.ts';

export async function runIngest(ctx: Context): Promise<IngestResult> {
  return withSession(ctx, 'ingest', async (session) => {
    const gateway = await session.start('web');
    const rss = new RssSampler(gateway.child.pid, 500);
    const watch = new CpuWatch({ gateway: gateway.child.pid });
    let cpu: CpuShares | null = null;
    const load = await runLoad(closedLoop(ctx, { label: 'ingest', origin: gateway.url }), ctx.cleanup, {
      onProgress: (p) => ctx.say(progressLine(p)),
      onWindow: (edge) => (edge === 'start' ? watch.start() : (cpu = watch.stop())),
    });
    const peakRssBytes = rss.stop();
    const tasksInDatabase = await session.count('select count(*) from tasks');
    const accepted = load.decisions.accepted ?? 0;
    return {
      role: gateway.role,
      load,
      peakRssBytes,
      cpu,
      decisionsAsExpected: decidedAsSent(load) && tasksInDatabase === accepted,
      tasksInDatabase,
    };
  });
}
