/** (d) oncehook ingest: signed deliveries, new and replayed, against the real binary on a fresh database. */
import { watchedLoad } from '../load/run.ts';
import { RssSampler } from '../proc.ts';
import { progressLine, type Context, type IngestResult } from './context.ts';
import { closedLoop, decidedAsSent } from './load-spec.ts';
import { withSession } from './session.ts';

export async function runIngest(ctx: Context): Promise<IngestResult> {
  return withSession(ctx, 'ingest', async (session) => {
    const gateway = await session.start('web');
    const rss = new RssSampler(gateway.child.pid, 500);
    const { load, cpu } = await watchedLoad(closedLoop(ctx, { label: 'ingest', origin: gateway.url }), ctx.cleanup, { gateway: gateway.child.pid }, {
      onProgress: (p) => ctx.say(progressLine(p)),
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
