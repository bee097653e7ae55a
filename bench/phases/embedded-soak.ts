/**
 * `npm start`'s deployment held for a long while at a sender's steady rate (`--embedded-soak-rate`), not at
 * its ceiling: what a small shop's gateway meets over hours. PGlite has no autovacuum, so the gateway vacuums
 * its updated tables every 30 seconds, and each pass holds the process — nothing is answered meanwhile —
 * for a time that grows with the tables. This phase shows how the passes, the ack latency, the memory and the
 * data directory move as the tables fill.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { LogTail } from '../log-tail.ts';
import { runLoad } from '../load/run.ts';
import { RssSampler } from '../proc.ts';
import { progressLine, type Context, type EmbeddedSoakResult, type SoakWindow, type VacuumPass } from './context.ts';
import { awaitForwarded, withEmbeddedGateway } from './embedded-world.ts';
import { closedLoop, decidedAsSent } from './load-spec.ts';
import { rssDrift } from './rss-drift.ts';

const WINDOW_MS = 60_000;
const VACUUM_MESSAGE = 'vacuumed the embedded database';

export async function runEmbeddedSoak(ctx: Context): Promise<EmbeddedSoakResult> {
  const { embeddedSoakSeconds: seconds, embeddedSoakRate: ratePerSecond } = ctx.options;
  return withEmbeddedGateway(ctx, 'embedded-soak', async ({ gateway, downstream, dataDir }) => {
    const rss = new RssSampler(gateway.child.pid, 2000);
    const log = new LogTail(gateway.logFile);
    const before = (await downstream.stats()).received;
    const vacuumPasses: VacuumPass[] = [];
    const windows: SoakWindow[] = [];
    let windowAt = 0;
    let windowWallAt = 0;
    const readPasses = () => {
      const found = log.read().flatMap((line) => vacuumPassOf(line, windowWallAt));
      vacuumPasses.push(...found);
      return found;
    };
    // Progress arrives as an event; the figures it needs are read without holding the generator's messages.
    let pending = Promise.resolve();
    const load = await runLoad(
      closedLoop(ctx, { label: 'embedded-soak', origin: gateway.url }, {
        ratePerSecond,
        durationMs: seconds * 1000,
        // Signed as it goes: at a steady rate that is cheap, and hours of deliveries would not fit in memory.
        presign: 1000,
        progressMs: WINDOW_MS,
      }),
      ctx.cleanup,
      {
        onWindow: (edge) => {
          rss.sample();
          if (edge === 'start') {
            windowAt = rss.samples.at(-1)!.atSeconds;
            windowWallAt = Date.now();
            readPasses();
          }
        },
        onProgress: (p) => {
          pending = pending.then(async () => {
            const passes = readPasses().filter((pass) => pass.atSeconds >= 0);
            const window: SoakWindow = {
              atSeconds: p.elapsedMs / 1000,
              perSecond: p.perSecond,
              p99Ms: p.p99Ms,
              maxMs: p.maxMs,
              errors: p.errors,
              rssBytes: rss.samples.at(-1)?.rssBytes ?? null,
              dataBytes: bytesUnder(dataDir),
              forwarded: (await downstream.stats()).received - before,
              vacuumPasses: passes.length,
              longestVacuumMs: passes.length ? Math.max(...passes.map((pass) => pass.totalMs)) : null,
            };
            windows.push(window);
            ctx.say(windowLine(progressLine(p), window));
          });
        },
      },
    );
    await pending;
    const forwarded = await awaitForwarded(ctx, downstream, before, load.decisions.accepted ?? 0);
    readPasses();
    return {
      load,
      ratePerSecond,
      ...rssDrift(rss, windowAt, seconds),
      peakRssBytes: rss.stop(),
      decisionsAsExpected: decidedAsSent(load),
      windows,
      vacuumPasses: vacuumPasses.filter((pass) => pass.atSeconds >= 0),
      dataBytes: bytesUnder(dataDir),
      ...forwarded,
    };
  });
}

function vacuumPassOf(line: string, windowWallAt: number): VacuumPass[] {
  if (!line.includes(VACUUM_MESSAGE)) return [];
  const entry = JSON.parse(line) as { time: number; ms: Record<string, number> };
  const totalMs = Object.values(entry.ms).reduce((a, b) => a + b, 0);
  return [{ atSeconds: (entry.time - windowWallAt) / 1000, ms: entry.ms, totalMs }];
}

function bytesUnder(dir: string): number {
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) bytes += statSync(join(entry.parentPath, entry.name)).size;
  }
  return bytes;
}

const mib = (bytes: number | null) => (bytes === null ? 'n/a' : `${(bytes / 2 ** 20).toFixed(0)} MiB`);

function windowLine(progress: string, w: SoakWindow): string {
  const vacuum = w.vacuumPasses ? `${w.vacuumPasses} passes, longest ${w.longestVacuumMs} ms` : 'no pass';
  return `${progress}  max ${Number.isFinite(w.maxMs) ? w.maxMs.toFixed(0) : 'n/a'} ms  rss ${mib(w.rssBytes)}  data ${mib(w.dataBytes)}  forwarded ${w.forwarded.toLocaleString('en-US')}  vacuum ${vacuum}`;
}
