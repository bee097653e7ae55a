/**
 * What `npm start` runs: one gateway process on embedded PGlite, receiving and forwarding, under the same
 * load as ingest. PGlite runs one transaction at a time in the gateway's own process, so this is the
 * default deployment's ceiling, not PostgreSQL's; the report prints it beside the rest, with no target.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startGateway, writeConfig } from '../gateway.ts';
import { runLoad } from '../load/run.ts';
import { CpuWatch, RssSampler, type CpuShares } from '../proc.ts';
import { startDownstream } from '../servers/start.ts';
import { progressLine, type Context, type EmbeddedResult } from './context.ts';
import { closedLoop } from './load-spec.ts';

/** How long the forwarding of what was accepted may take after the load ends before the phase gives up. */
const DRAIN_LIMIT_MS = 60_000;

export async function runEmbedded(ctx: Context): Promise<EmbeddedResult> {
  const dataDir = mkdtempSync(join(ctx.tmpDir, 'pglite-'));
  const downstream = await startDownstream(ctx.cleanup);
  try {
    const gateway = await startGateway({
      name: 'oncehook embedded',
      configFile: writeConfig(ctx.tmpDir, downstream.origin),
      databaseUrl: null,
      dataDir,
      role: 'all',
      logFile: join(ctx.tmpDir, 'embedded.log'),
      logLevel: ctx.options.gatewayLogLevel,
      profileDir: ctx.profileDir,
      sources: ctx.options.sources,
      cleanup: ctx.cleanup,
    });
    try {
      const rss = new RssSampler(gateway.child.pid, 500);
      const watch = new CpuWatch({ gateway: gateway.child.pid });
      let cpu: CpuShares | null = null;
      const before = (await downstream.stats()).received;
      const load = await runLoad(closedLoop(ctx, { label: 'embedded', origin: gateway.url }), ctx.cleanup, {
        onProgress: (p) => ctx.say(progressLine(p)),
        onWindow: (edge) => (edge === 'start' ? watch.start() : (cpu = watch.stop())),
      });
      const ended = performance.now();
      const accepted = load.decisions.accepted ?? 0;
      const forwardedDuringLoad = (await downstream.stats()).received - before;
      ctx.say(`forwarding what was accepted: ${forwardedDuringLoad.toLocaleString('en-US')} of ${accepted.toLocaleString('en-US')} so far…`);
      let drainAfterMs: number | null = null;
      while (performance.now() - ended < DRAIN_LIMIT_MS) {
        if ((await downstream.stats()).received - before >= accepted) {
          drainAfterMs = performance.now() - ended;
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return {
        role: gateway.role,
        load,
        peakRssBytes: rss.stop(),
        cpu,
        decisionsAsExpected:
          load.errors === 0 && accepted === load.sent.unique && (load.decisions.duplicate_delivery ?? 0) === load.sent.duplicates,
        forwardedDuringLoad,
        drainAfterMs,
      };
    } finally {
      await gateway.stop();
    }
  } finally {
    await downstream.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
