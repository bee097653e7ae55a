/**
 * The soak: ingest load held for minutes while the gateway's resident memory is sampled. Growth is measured
 * from once the process is warm to the end: JIT code, pools and caches fill early and are not a leak. RSS
 * swings with every major GC, so each end is the median of a fifth of the soak's samples, not one sample.
 */
import { runLoad } from '../load/run.ts';
import { RssSampler } from '../proc.ts';
import { progressLine, type Context, type SoakResult } from './context.ts';
import { closedLoop } from './load-spec.ts';
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
    const seconds = durationMs / 1000;
    const samples = rss.samples
      .map((s) => ({ atSeconds: s.atSeconds - windowAt, rssBytes: s.rssBytes }))
      .filter((s) => s.atSeconds >= 0 && s.atSeconds <= seconds + 1);
    const baseline = median(samples.filter((s) => s.atSeconds >= seconds * 0.2 && s.atSeconds < seconds * 0.4));
    const final = median(samples.filter((s) => s.atSeconds >= seconds * 0.8));
    return {
      load,
      samples,
      baselineRssBytes: baseline,
      finalRssBytes: final,
      growth: (final - baseline) / baseline,
      peakRssBytes,
    };
  });
}

function median(samples: Array<{ rssBytes: number }>): number {
  const sorted = samples.map((s) => s.rssBytes).sort((a, b) => a - b);
  return sorted.length ? sorted[Math.floor((sorted.length - 1) / 2)]! : Number.NaN;
}
