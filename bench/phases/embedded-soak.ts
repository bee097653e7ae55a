/**
 * `npm start`'s deployment held for a long while at a sender's steady rate (`--embedded-soak-rate`), not at
 * its ceiling: what a small shop's gateway meets over hours. PGlite has neither autovacuum nor a checkpointer,
 * so every 30 seconds the gateway vacuums the tables that changed and checkpoints, and each step holds the
 * process — nothing is answered meanwhile — for a time that grows with the tables. This phase shows how the passes, the
 * ack latency, the memory and the data directory move as the tables fill.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { LogTail } from '../log-tail.ts';
import { mib } from '../format.ts';
import { runLoad } from '../load/run.ts';
import { RssSampler } from '../proc.ts';
import { longestStepMs, progressLine, type Context, type EmbeddedSoakResult, type SoakWindow, type UpkeepPass } from './context.ts';
import { awaitForwarded, withEmbeddedGateway } from './embedded-world.ts';
import { closedLoop, decidedAsSent } from './load-spec.ts';
import { rssDrift } from './rss-drift.ts';

const WINDOW_MS = 60_000;
const UPKEEP_MESSAGE = 'embedded database upkeep';

export async function runEmbeddedSoak(ctx: Context): Promise<EmbeddedSoakResult> {
  const { embeddedSoakSeconds: seconds, embeddedSoakRate: ratePerSecond } = ctx.options;
  return withEmbeddedGateway(ctx, 'embedded-soak', async ({ gateway, downstream, dataDir }) => {
    const rss = new RssSampler(gateway.child.pid, 2000);
    const log = new LogTail(gateway.logFile);
    const before = (await downstream.stats()).received;
    const upkeepPasses: UpkeepPass[] = [];
    const windows: SoakWindow[] = [];
    let windowAt = 0;
    let windowWallAt = 0;
    const readPasses = () => {
      const found = log.read().flatMap((line) => upkeepPassOf(line, windowWallAt));
      upkeepPasses.push(...found);
      return found;
    };
    // Progress arrives as an event; the figures it needs are read without holding the generator's messages.
    let pending = Promise.resolve();
    let lastFlushed: DiskFlushes | null = null;
    const scrape = async () => (await fetch(`${gateway.url}/metrics`)).text();
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
            pending = pending.then(async () => {
              lastFlushed = diskFlushes(await scrape(), 0);
            });
          }
        },
        onProgress: (p) => {
          pending = pending.then(async () => {
            const passes = readPasses().filter((pass) => pass.atSeconds >= 0);
            const scrapeStarted = performance.now();
            const scraped = await scrape();
            const scrapeMs = performance.now() - scrapeStarted;
            const stall = metricValue(scraped, 'nodejs_eventloop_lag_max_seconds');
            const atSeconds = p.elapsedMs / 1000;
            const flushed = diskFlushes(scraped, atSeconds);
            const sinceLast = flushed && lastFlushed ? flushed.count - lastFlushed.count : null;
            const window: SoakWindow = {
              atSeconds,
              perSecond: p.perSecond,
              p99Ms: p.p99Ms,
              maxMs: p.maxMs,
              errors: p.errors,
              rssBytes: rss.samples.at(-1)?.rssBytes ?? null,
              dataBytes: bytesUnder(dataDir),
              forwarded: (await downstream.stats()).received - before,
              upkeepPasses: passes.length,
              longestStepMs: longestStepMs(passes),
              scrapeMs,
              loopStallMs: stall === null ? null : stall * 1000,
              flushesPerSecond: sinceLast === null ? null : sinceLast / (atSeconds - lastFlushed!.atSeconds),
              flushMs: sinceLast ? ((flushed!.seconds - lastFlushed!.seconds) * 1000) / sinceLast : null,
            };
            lastFlushed = flushed;
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
      upkeepPasses: upkeepPasses.filter((pass) => pass.atSeconds >= 0),
      dataBytes: bytesUnder(dataDir),
      ...forwarded,
    };
  });
}

function upkeepPassOf(line: string, windowWallAt: number): UpkeepPass[] {
  if (!line.includes(UPKEEP_MESSAGE)) return [];
  const entry = JSON.parse(line) as { time: number; ms: Record<string, number> };
  return [{ atSeconds: (entry.time - windowWallAt) / 1000, ms: entry.ms }];
}

/** The bytes of every file under `dir`. */
export function bytesUnder(dir: string): number {
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) bytes += statSync(join(entry.parentPath, entry.name)).size;
  }
  return bytes;
}

interface DiskFlushes {
  count: number;
  seconds: number;
  atSeconds: number;
}

/** An unlabelled metric's value in a /metrics scrape, or null when the gateway does not report it. */
function metricValue(scraped: string, name: string): number | null {
  const line = new RegExp(`^${name} (\\S+)$`, 'm').exec(scraped);
  return line ? Number(line[1]) : null;
}

/** The gateway's running totals of PGlite's flushes to disk, as its /metrics reports them. */
function diskFlushes(scraped: string, atSeconds: number): DiskFlushes | null {
  const count = metricValue(scraped, 'oncehook_embedded_disk_syncs_total');
  const seconds = metricValue(scraped, 'oncehook_embedded_disk_sync_seconds_total');
  return count !== null && seconds !== null ? { count, seconds, atSeconds } : null;
}

function windowLine(progress: string, w: SoakWindow): string {
  const upkeep = w.upkeepPasses ? `${w.upkeepPasses} passes, longest step ${w.longestStepMs} ms` : 'no pass';
  return `${progress}  max ${Number.isFinite(w.maxMs) ? w.maxMs.toFixed(0) : 'n/a'} ms  rss ${mib(w.rssBytes)}  data ${mib(w.dataBytes)}  forwarded ${w.forwarded.toLocaleString('en-US')}  upkeep ${upkeep}  /metrics ${w.scrapeMs.toFixed(0)} ms  loop stall ${w.loopStallMs === null ? 'n/a' : `${w.loopStallMs.toFixed(0)} ms`}  flushes ${w.flushesPerSecond === null ? 'n/a' : `${w.flushesPerSecond.toFixed(0)}/s`}${w.flushMs === null ? '' : `, ${w.flushMs.toFixed(2)} ms each`}`;
}
