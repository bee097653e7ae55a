/**
 * (d″) What an action's `order` costs forwarding: (d)'s backlog, filled by real ingest and drained by a `worker`
 * gateway, once for the bench's action as it is and once with `order` over its orders' customers (1,000 keys, in
 * arrival order), alternating (unordered, ordered, ordered, unordered), each on a fresh database.
 */
import { CUSTOMERS } from '../deliveries.ts';
import type { Context, ForwardOrderedResult } from './context.ts';
import { drainVariant } from './forward-variant.ts';

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
  const { backlog, work } = await drainVariant(ctx, `forward-ordered-${n}`, ordered ? ORDER : {});
  return { ordered, backlog, work };
}
