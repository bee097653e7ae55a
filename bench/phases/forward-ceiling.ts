/**
 * (e) The forwarding ceiling: what this machine's two cores allow a forwarder that records nothing — the same
 * requests to the same downstream from a bare undici pool, at oncehook's worker concurrency and at pg-boss's pool
 * size. pg-boss's and oncehook's forwarding rates are read beside the faster of the two: the ceiling ÷ pg-boss is
 * the largest forwarding ratio any design reaches here.
 */
import type { CeilingMessage } from '../ceiling/protocol.ts';
import { forkTs, nextMessage } from '../children.ts';
import { CpuWatch, type CpuShares } from '../proc.ts';
import { startDownstream, type Downstream } from '../servers/start.ts';
import type { CeilingRun, Context, ForwardCeilingResult } from './context.ts';

const SENDER = new URL('../ceiling/sender.ts', import.meta.url);

export async function runForwardCeiling(ctx: Context): Promise<ForwardCeilingResult> {
  const { options } = ctx;
  const downstream = await startDownstream(ctx.cleanup);
  try {
    const runs: CeilingRun[] = [];
    for (const inFlight of new Set([options.workerConcurrency, options.concurrency])) runs.push(await measure(ctx, downstream, inFlight));
    // A run with failed requests measured the failures too: it bounds nothing.
    const clean = runs.filter((run) => run.errors === 0);
    if (clean.length === 0) throw new Error(`every setting had failed requests (${runs.map((run) => `${run.errors} at ${run.inFlight} in flight`).join(', ')})`);
    return { runs, best: clean.reduce((a, b) => (b.perSecond > a.perSecond ? b : a)) };
  } finally {
    await downstream.stop();
  }
}

async function measure(ctx: Context, downstream: Downstream, inFlight: number): Promise<CeilingRun> {
  const { options } = ctx;
  const sender = forkTs('forwarding ceiling sender', SENDER, ctx.cleanup);
  const watch = new CpuWatch({ sender: sender.pid, downstream: downstream.child.pid });
  let cpu: CpuShares | null = null;
  sender.process.on('message', (m: CeilingMessage) => {
    if (m.type !== 'window') return;
    if (m.edge === 'start') watch.start();
    else cpu = watch.stop();
  });
  try {
    ctx.say(`${inFlight} requests in flight on as many connections for ${options.duration} s…`);
    sender.process.send({ origin: downstream.origin, inFlight, warmupMs: options.warmup * 1000, durationMs: options.duration * 1000, bodyBytes: options.bodyBytes });
    const answer = await nextMessage(sender, (m): m is Extract<CeilingMessage, { type: 'done' | 'failed' }> =>
      ['done', 'failed'].includes((m as CeilingMessage).type),
    );
    if (answer.type === 'failed') throw new Error(`the ceiling's sender failed: ${answer.message}`);
    return { ...answer.figures, inFlight, cpu };
  } finally {
    await sender.stop();
  }
}
