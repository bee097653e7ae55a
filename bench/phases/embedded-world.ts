import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startGateway, writeConfig, type RunningGateway } from '../gateway.ts';
import { startDownstream, type Downstream } from '../servers/start.ts';
import type { Context } from './context.ts';

/** How long the forwarding of what was accepted may take after the load ends before a phase gives up. */
const DRAIN_LIMIT_MS = 60_000;

export interface EmbeddedWorld {
  gateway: RunningGateway;
  downstream: Downstream;
  dataDir: string;
}

/**
 * What `npm start` runs — one gateway process on embedded PGlite in a fresh data directory, receiving and
 * forwarding — with a downstream for its action; all stopped and removed when `run` ends.
 */
export async function withEmbeddedGateway<T>(
  ctx: Context,
  label: string,
  run: (world: EmbeddedWorld) => Promise<T>,
  /** `serve --concurrency`; serve's own default when unset, as `npm start` runs. */
  concurrency?: number,
): Promise<T> {
  const dataDir = mkdtempSync(join(ctx.tmpDir, 'pglite-'));
  const downstream = await startDownstream(ctx.cleanup);
  try {
    const gateway = await startGateway({
      name: `oncehook ${label}`,
      configFile: writeConfig(ctx.tmpDir, downstream.origin),
      databaseUrl: null,
      dataDir,
      role: 'all',
      concurrency,
      logFile: join(ctx.tmpDir, `${label}.log`),
      logLevel: ctx.options.gatewayLogLevel,
      profileDir: ctx.profileDir,
      sources: ctx.options.sources,
      cleanup: ctx.cleanup,
    });
    try {
      return await run({ gateway, downstream, dataDir });
    } finally {
      await gateway.stop();
    }
  } finally {
    await downstream.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * Once a load has ended: how many of the `accepted` tasks the downstream had by then (counted from `before`),
 * and how long the rest took to arrive — null when they did not within a minute.
 */
export async function awaitForwarded(ctx: Context, downstream: Downstream, before: number, accepted: number) {
  const ended = performance.now();
  const forwardedDuringLoad = (await downstream.stats()).received - before;
  ctx.say(`forwarding what was accepted: ${forwardedDuringLoad.toLocaleString('en-US')} of ${accepted.toLocaleString('en-US')} so far…`);
  while (performance.now() - ended < DRAIN_LIMIT_MS) {
    if ((await downstream.stats()).received - before >= accepted) return { forwardedDuringLoad, drainAfterMs: performance.now() - ended };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { forwardedDuringLoad, drainAfterMs: null };
}
