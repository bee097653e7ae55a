/**
 * The soak: ingest load held for minutes while the gateway's resident memory is sampled (see rssDrift for how
 * growth is read).
 */
import { runLoad } from '../load/run.ts';
import { RssSampler } from '../proc.ts';
import { progressLine, type Context, type SoakResult } from './context.ts';
import { closedLoop } from './load-spec.ts';
import { rssDrift } from './rss-drift.ts';
import { withSession } from './session.ts';

export async function runSoak(ctx: Context): Promise<SoakResult> {
  return withSession(ctx, 'soak', async (session) => {
    const gateway = await session.start('web');
    const rss = new RssSampler(gateway.child.pid, 2000);
    let windowAt = 0;
    const durationMs = ctx.options.soakSeconds * 1000;
    const load = await runLoad(
      closedLoop(ctx, { label: 'soak', origin: gateway.url }, { durationMs, presign: 100_000, progressMs: 10_000 }),
      ctx.cleanup,
      {
        onProgress: (p) => {
          const now = rss.samples.at(-1)?.rssBytes ?? 0;
          ctx.say(`${progressLine(p)}  rss ${(now / 2 ** 20).toFixed(0)} MiB`);
        },
        onWindow: (edge) => {
          rss.sample();
          if (edge === 'start') windowAt = rss.samples.at(-1)!.atSeconds;
        },
      },
    );
    const peakRssBytes = rss.stop();
    return { load, ...rssDrift(rss, windowAt, durationMs / 1000), peakRssBytes };
  });
}
