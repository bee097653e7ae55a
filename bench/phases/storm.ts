/**
 * The duplicate storm: one delivery sent `stormSize` times at once, as a sender's retries pile up after an
 * outage. Exactly one may be accepted; the rest wait on that one's commit and must answer as duplicates.
 */
import { runLoad, watchedLoad } from '../load/run.ts';
import { RssSampler } from '../proc.ts';
import type { Context, StormResult } from './context.ts';
import { closedLoop } from './load-spec.ts';
import { withSession } from './session.ts';

export async function runStorm(ctx: Context): Promise<StormResult> {
  return withSession(ctx, 'storm', async (session) => {
    const gateway = await session.start('web');
    // A storm hits a gateway that has been running: warm its code paths and connection pool first.
    await runLoad(
      closedLoop(ctx, { label: 'storm-warmup', origin: gateway.url }, { warmupMs: 0, durationMs: 1000, duplicates: 0, presign: 5000 }),
      ctx.cleanup,
    );
    const rss = new RssSampler(gateway.child.pid, 100);
    const runId = `storm-${process.pid}-${Date.now().toString(36)}`;
    ctx.say(`${ctx.options.stormSize} identical deliveries at once…`);
    const { load, cpu } = await watchedLoad(
      { kind: 'burst', label: 'storm', origin: gateway.url, path: '/in/shop', count: ctx.options.stormSize, bodyBytes: ctx.options.bodyBytes, runId },
      ctx.cleanup,
      { gateway: gateway.child.pid },
    );
    const peakRssBytes = rss.stop();
    // The burst's one delivery is the first a DeliveryMaker with this run ID makes: event `${runId}-0`.
    const tasksForTheEvent = await session.count(`select count(*) from tasks where event_id = '${runId}-0'`);
    return {
      role: gateway.role,
      load,
      peakRssBytes,
      cpu,
      exactlyOneAccepted: (load.decisions.accepted ?? 0) === 1 && tasksForTheEvent === 1,
      tasksForTheEvent,
    };
  });
}
