/**
 * (e) The forwarding ceiling: what this machine's two cores allow a forwarder that records nothing — the same
 * requests, as many in flight, to the same downstream, from a bare undici pool. pg-boss's and oncehook's
 * forwarding rates are read beside it: the ceiling ÷ pg-boss is the largest forwarding ratio any design reaches here.
 */
import type { CeilingMessage } from '../ceiling/protocol.ts';
import { forkTs, nextMessage } from '../children.ts';
import { CpuWatch, type CpuShares } from '../proc.ts';
import { startDownstream } from '../servers/start.ts';
import type { Context, ForwardCeilingResult } from './context.ts';

const SENDER = new URL('../ceiling/sender.ts', import.meta.url);

export async function runForwardCeiling(ctx: Context): Promise<ForwardCeilingResult> {
  const { options } = ctx;
  const downstream = await startDownstream(ctx.cleanup);
  const sender = forkTs('forwarding ceiling sender', SENDER, ctx.cleanup);
  const watch = new CpuWatch({ sender: sender.pid, downstream: downstream.child.pid });
  let cpu: CpuShares | null = null;
  sender.process.on('message', (m: CeilingMessage) => {
    if (m.type !== 'window') return;
    if (m.edge === 'start') watch.start();
    else cpu = watch.stop();
  });
  try {
    const inFlight = options.workerConcurrency;
    ctx.say(`${inFlight} requests in flight for ${options.duration} s…`);
    sender.process.send({ origin: downstream.origin, inFlight, warmupMs: options.warmup * 1000, durationMs: options.duration * 1000, bodyBytes: options.bodyBytes });
    const answer = await nextMessage(sender, (m): m is Extract<CeilingMessage, { type: 'done' | 'failed' }> =>
      ['done', 'failed'].includes((m as CeilingMessage).type),
    );
    if (answer.type === 'failed') throw new Error(`the ceiling's sender failed: ${answer.message}`);
    return { ...answer.figures, inFlight, cpu };
  } finally {
    await sender.stop();
    await downstream.stop();
  }
}
