/**
 * (d′) What an action's filter and transform, and the public endpoint's limits on a client, cost at ingest: the
 * ingest phase's load against four gateways in turn — the bench's usual action, the same with a filter every
 * delivery passes, with that filter and a transform, and the usual action behind the exposure limits — each on a
 * fresh database, in alternating order, and read against each other (shaped-cost.ts).
 */
import { watchedLoad } from '../load/run.ts';
import { RssSampler } from '../proc.ts';
import { progressLine, type Context, type IngestShapedResult } from './context.ts';
import { closedLoop, decidedAsSent } from './load-spec.ts';
import { withSession } from './session.ts';
import { runOrder, SHAPE_NAMES, SHAPES, shapedFigures, type ShapedRun, type ShapeName } from './shaped-cost.ts';

/** Two rounds, the second backwards: every shape measured twice, the drift of a shared machine spread evenly. */
const ROUNDS = 2;

export async function runIngestShaped(ctx: Context): Promise<IngestShapedResult> {
  const runs: ShapedRun[] = [];
  for (const [i, shape] of runOrder(ROUNDS).entries()) {
    ctx.say(`run ${i + 1} of ${ROUNDS * SHAPE_NAMES.length}: ${shape}`);
    runs.push(await measure(ctx, shape, i + 1));
  }
  return { runs, figures: shapedFigures(runs) };
}

async function measure(ctx: Context, shape: ShapeName, n: number): Promise<ShapedRun> {
  const label = `ingest-shaped-${n}`;
  const actionShape = SHAPES[shape];
  return withSession(
    ctx,
    label,
    async (session) => {
      const gateway = await session.start('web');
      const rss = new RssSampler(gateway.child.pid, 500);
      const { load, cpu } = await watchedLoad(closedLoop(ctx, { label, origin: gateway.url }), ctx.cleanup, { gateway: gateway.child.pid }, {
        onProgress: (p) => ctx.say(`${shape.padEnd(18)} ${progressLine(p)}`),
      });
      const peakRssBytes = rss.stop();
      const tasksInDatabase = await session.count('select count(*) from tasks');
      // The transform's body carries the task ID; the sender's bytes never do. A failed transform leaves the task failed.
      const shapedTasks = await session.count(
        "select count(*) from tasks where state <> 'failed' and convert_from(body, 'UTF8')::jsonb ? 'external_id'",
      );
      const accepted = load.decisions.accepted ?? 0;
      return {
        shape,
        load,
        cpu,
        peakRssBytes,
        decisionsAsExpected:
          decidedAsSent(load) && tasksInDatabase === accepted && shapedTasks === (actionShape.transform === undefined ? 0 : accepted),
        tasksInDatabase,
        shapedTasks,
      };
    },
    actionShape,
  );
}
