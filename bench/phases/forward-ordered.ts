/**
 * (d″) What an action's `order` costs forwarding: (d)'s backlog, filled by real ingest and drained by a `worker`
 * gateway, once for the bench's action as it is and once with `order` over its orders' customers (1,000 keys, in
 * arrival order), alternating (unordered, ordered, ordered, unordered), each on a fresh database.
 */
import { CUSTOMERS } from '../deliveries.ts';
import { runLoad } from '../load/run.ts';
import { counter } from '../postgres.ts';
import { progressLine, type Context, type ForwardOrderedResult } from './context.ts';
import { measureDrain } from './drain.ts';
import { closedLoop } from './load-spec.ts';
import { withSession } from './session.ts';

const ORDER = { order: { key: '{body:/customer/id}', mode: 'sequence' as const } };
const RUNS = [false, true, true, false];

export async function runForwardOrdered(ctx: Context): Promise<ForwardOrderedResult> {
  const runs: ForwardOrderedResult['runs'] = [];
  for (const [i, ordered] of RUNS.entries()) {
    ctx.say(`run ${i + 1} of ${RUNS.length}: ${ordered ? `ordered over ${CUSTOMERS} keys` : 'unordered'}`);
    runs.push(await drainOnce(ctx, ordered, i + 1));
  }
  const mean = (ordered: boolean) => {
    const rates = runs.filter((run) => run.ordered === ordered && run.work.downstreamReceived > 0).map((run) => run.work.perSecond);
    return rates.length === 0 ? null : rates.reduce((a, b) => a + b, 0) / rates.length;
  };
  const [ordered, unordered] = [mean(true), mean(false)];
  return { runs, vsUnordered: ordered !== null && unordered ? ordered / unordered : null };
}

async function drainOnce(ctx: Context, ordered: boolean, n: number): Promise<ForwardOrderedResult['runs'][number]> {
  const label = `forward-ordered-${n}`;
  return withSession(
    ctx,
    label,
    async (session) => {
      const web = await session.start('web', `oncehook ${label} (web)`);
      await runLoad(closedLoop(ctx, { label, origin: web.url }, { duplicates: 0 }), ctx.cleanup, {
        onProgress: (p) => ctx.say(`fill ${progressLine(p)}`),
      });
      await web.stop();
      const tasks = counter(session.databaseUrl, ctx.cleanup);
      try {
        const backlog = await tasks.count(`select count(*) from tasks where state = 'pending'`);
        ctx.say(`work and forward a backlog of ${backlog.toLocaleString('en-US')} tasks…`);
        const worker = await session.start('worker', `oncehook ${label} (worker)`);
        const work = await measureDrain(ctx, {
          backlog,
          downstream: session.downstream,
          capMs: ctx.options.duration * 1000 * 3,
          completed: () => tasks.count(`select count(*) from tasks where state = 'succeeded'`),
          worker: worker.child.pid,
        });
        await worker.stop();
        return { ordered, backlog, work };
      } finally {
        await tasks.close();
      }
    },
    ordered ? ORDER : {},
  );
}
