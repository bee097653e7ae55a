import { percentile } from '../histogram.ts';
import { wallNow } from '../servers/protocol.ts';
import type { Downstream } from '../servers/start.ts';
import { CpuWatch } from '../proc.ts';
import type { Context, DrainResult, IdleLatency } from './context.ts';

const POLL_MS = 100;

/**
 * Work-and-forward rate, measured the same way for every queue: a backlog is waiting, workers start, and the
 * clock runs from the first request the downstream receives until the database shows every job recorded
 * as done — a job is not done when it is sent, only when a crash could no longer make it be sent again.
 * A queue that has not drained by `capMs` is rated on what it finished.
 *
 * The database is asked only once the downstream has had a request for every job: a count of the finished jobs
 * ten times a second read the whole table each time, 11-14 ms of PostgreSQL's time a count at 50,000-60,000 tasks, a
 * tenth of a core taken from the queue being measured, and most from the one PostgreSQL already held back.
 */
export async function measureDrain(
  ctx: Context,
  options: {
    backlog: number;
    completed: () => Promise<number>;
    downstream: Downstream;
    /** What the downstream had received before the workers started (receivedBefore). */
    sentBefore: number;
    capMs: number;
    worker: number;
  },
): Promise<DrainResult> {
  const watch = new CpuWatch({ worker: options.worker, downstream: options.downstream.child.pid });
  watch.start();
  const started = wallNow();
  let completed = 0;
  let lastSaid = started;
  for (;;) {
    const sent = (await options.downstream.stats()).received - options.sentBefore;
    if (sent >= options.backlog) completed = await options.completed();
    const now = wallNow();
    if (completed >= options.backlog || now - started > options.capMs) break;
    if (now - lastSaid >= 2000) {
      lastSaid = now;
      ctx.say(`${((now - started) / 1000).toFixed(0).padStart(4)} s  ${Math.min(sent, options.backlog).toLocaleString('en-US')} of ${options.backlog.toLocaleString('en-US')} sent`);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  const doneAt = wallNow();
  const cpu = watch.stop();
  // Cut short by the cap: rated on what the database shows finished.
  if (completed < options.backlog) completed = await options.completed();
  const stats = await options.downstream.stats();
  const elapsedMs = doneAt - (stats.firstAt ?? started);
  return {
    backlog: options.backlog,
    completed,
    elapsedMs,
    perSecond: (completed * 1000) / elapsedMs,
    drained: completed >= options.backlog,
    downstreamReceived: stats.received,
    cpu,
  };
}

/** The downstream's count of requests, read before a drain's workers start: measureDrain counts from it. */
export const receivedBefore = async (downstream: Downstream): Promise<number> => (await downstream.stats()).received;

/**
 * Waits, unmeasured, for a backlog that outlived the measurement to finish: an idle latency measured behind
 * leftover work would measure the leftover work. False if it has not finished within `maxMs`.
 */
export async function settle(backlog: number, completed: () => Promise<number>, maxMs = 60_000): Promise<boolean> {
  const deadline = performance.now() + maxMs;
  while (performance.now() < deadline) {
    if ((await completed()) >= backlog) return true;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return false;
}

/**
 * Idle first-forward latency: with the queue empty and the workers idle, one item is handed over and the
 * clock runs until the downstream has it. Gaps between probes are irregular so they do not line up with a
 * polling interval, and the first probe waits a second so nothing from the drain is still in flight.
 */
export async function measureIdleLatency(
  downstream: Downstream,
  probe: (marker: string) => Promise<number>,
  count = 5,
): Promise<IdleLatency> {
  const samplesMs: number[] = [];
  await new Promise((resolve) => setTimeout(resolve, 1000));
  for (let i = 0; i < count; i++) {
    await new Promise((resolve) => setTimeout(resolve, 300 + ((i * 397) % 1000)));
    const marker = `probe-${process.pid}-${Date.now()}-${i}`;
    const sentAt = await probe(marker);
    const arrivedAt = await downstream.probeArrival(marker);
    if (arrivedAt === null) throw new Error(`probe ${marker} never reached the downstream within 30 s`);
    samplesMs.push(arrivedAt - sentAt);
  }
  const sorted = [...samplesMs].sort((a, b) => a - b);
  return { samplesMs, p50: percentile(sorted, 0.5), max: sorted[sorted.length - 1]! };
}
