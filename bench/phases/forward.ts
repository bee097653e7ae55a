/**
 * (d) oncehook forwarding, measured as pg-boss's is: a backlog of tasks made by real ingest (a `web`
 * gateway), then a `worker` gateway drains it to the downstream; then, idle, one delivery at a time
 * through a default (`all`) gateway until the downstream has it.
 */
import { fileURLToPath } from 'node:url';
import { signedDelivery } from '../deliveries.ts';
import { runLoad } from '../load/run.ts';
import { counter } from '../postgres.ts';
import { RssSampler } from '../proc.ts';
import { wallNow } from '../servers/protocol.ts';
import { progressLine, type Context, type ForwardResult } from './context.ts';
import { measureDrain, measureIdleLatency, receivedBefore, settle } from './drain.ts';
import { closedLoop } from './load-spec.ts';
import { withSession } from './session.ts';
import { bundleWorkerModules, partCosts, workerModules } from '../worker-parts.ts';

/** The checkout whose build the worker ran: its parts are timed from the same sources, bundled alike. */
const REPO = fileURLToPath(new URL('../..', import.meta.url));

export async function runForward(ctx: Context): Promise<ForwardResult> {
  return withSession(ctx, 'forward', async (session) => {
    const web = await session.start('web', 'oncehook forward (web)');
    const fill = await runLoad(closedLoop(ctx, { label: 'forward-fill', origin: web.url }, { duplicates: 0 }), ctx.cleanup, {
      onProgress: (p) => ctx.say(`fill ${progressLine(p)}`),
    });
    await web.stop();
    const tasks = counter(session.databaseUrl, ctx.cleanup);
    const backlog = await tasks.count(`select count(*) from tasks where state = 'pending'`);
    ctx.say(`work and forward a backlog of ${backlog.toLocaleString('en-US')} tasks…`);
    const sentBefore = await receivedBefore(session.downstream);
    const worker = await session.start('worker', 'oncehook forward (worker)');
    const rss = new RssSampler(worker.child.pid, 500);
    const completed = () => tasks.count(`select count(*) from tasks where state = 'succeeded'`);
    const work = await measureDrain(ctx, {
      backlog,
      downstream: session.downstream,
      sentBefore,
      capMs: ctx.options.duration * 1000 * 3,
      completed,
      worker: worker.child.pid,
    });
    const peakRssBytes = rss.stop();
    if (work.downstreamReceived === 0) {
      return { measured: false, reason: `the worker forwarded nothing in ${(work.elapsedMs / 1000).toFixed(0)} s` };
    }
    const idle = work.drained || (await settle(backlog, completed));
    await tasks.close();
    await worker.stop();
    ctx.say("each part of the worker's path alone…");
    const parts = await partCosts(await workerModules(ctx.options.sources ? undefined : await bundleWorkerModules(REPO)), session.downstream.origin, signedDelivery({ eventId: 'parts', bytes: ctx.options.bodyBytes }).body.toString());
    if (!idle) return { measured: true, fill, work, idleFirstForward: null, peakRssBytes, parts };

    ctx.say('idle first-forward latency…');
    const gateway = await session.start('all', 'oncehook forward (all)');
    const idleFirstForward = await measureIdleLatency(session.downstream, async (marker) => {
      const delivery = signedDelivery({ eventId: marker, marker, bytes: ctx.options.bodyBytes });
      const headers = new Headers();
      for (let i = 0; i < delivery.headers.length; i += 2) headers.set(delivery.headers[i]!, delivery.headers[i + 1]!);
      const sentAt = wallNow();
      const response = await fetch(`${gateway.url}/in/shop`, { method: 'POST', headers, body: new Uint8Array(delivery.body) });
      if (!response.ok) throw new Error(`the probe delivery was answered ${response.status}: ${await response.text()}`);
      return sentAt;
    });
    return { measured: true, fill, work, idleFirstForward, peakRssBytes, parts };
  });
}
