/**
 * What `npm start` runs: one gateway process on embedded PGlite, receiving and forwarding, under the same
 * load as ingest. PGlite runs one transaction at a time in the gateway's own process, so this is the
 * default deployment's ceiling, not PostgreSQL's; the report prints it beside the rest, with no target.
 */
import { watchedLoad } from '../load/run.ts';
import { RssSampler } from '../proc.ts';
import { progressLine, type Context, type EmbeddedResult } from './context.ts';
import { awaitForwarded, withEmbeddedGateway } from './embedded-world.ts';
import { closedLoop, decidedAsSent } from './load-spec.ts';

export async function runEmbedded(ctx: Context): Promise<EmbeddedResult> {
  return withEmbeddedGateway(ctx, 'embedded', async ({ gateway, downstream }) => {
    const rss = new RssSampler(gateway.child.pid, 500);
    const before = (await downstream.stats()).received;
    const { load, cpu } = await watchedLoad(closedLoop(ctx, { label: 'embedded', origin: gateway.url }), ctx.cleanup, { gateway: gateway.child.pid }, {
      onProgress: (p) => ctx.say(progressLine(p)),
    });
    const forwarded = await awaitForwarded(ctx, downstream, before, load.decisions.accepted ?? 0);
    return { role: gateway.role, load, peakRssBytes: rss.stop(), cpu, decisionsAsExpected: decidedAsSent(load), ...forwarded };
  });
}
