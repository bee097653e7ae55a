/**
 * One drain of (d)'s kind for an action shaped some way: a backlog filled by real ingest against a `web` gateway,
 * then drained by a `worker` gateway, on a fresh database. What the phases that price a feature of an action
 * (forward-ordered.ts, forward-priced.ts) measure each run by.
 */
import type { LoadResult } from '../load/protocol.ts';
import { runLoad } from '../load/run.ts';
import { counter } from '../postgres.ts';
import { progressLine, type Context, type DrainResult } from './context.ts';
import { measureDrain, receivedBefore } from './drain.ts';
import { closedLoop } from './load-spec.ts';
import { withSession, type Session } from './session.ts';
import type { ActionShape } from './shaped-cost.ts';

export interface VariantDrain {
  backlog: number;
  /** The ingest load that made the backlog. */
  fill: LoadResult;
  work: DrainResult;
  /** Tasks made with a URL of their own (an action's url that names the delivery). */
  ownUrls: number;
  /** Tokens the downstream gave out, and requests it received that carried one. */
  tokens: number;
  authorized: number;
}

export async function drainVariant(ctx: Context, label: string, shape: ActionShape): Promise<VariantDrain> {
  return withSession(
    ctx,
    label,
    async (session) => {
      const web = await session.start('web', `oncehook ${label} (web)`);
      const fill = await runLoad(closedLoop(ctx, { label, origin: web.url }, { duplicates: 0 }), ctx.cleanup, {
        onProgress: (p) => ctx.say(`fill ${progressLine(p)}`),
      });
      await web.stop();
      const work = await drainBacklog(ctx, session, label);
      const ownUrls = await session.count('select count(*) from tasks where request_url is not null');
      const { tokens, authorized } = await session.downstream.stats();
      return { backlog: work.backlog, fill, work, ownUrls, tokens, authorized };
    },
    shape,
  );
}

/**
 * Drains the session's pending tasks with a `worker` gateway, as (d) does. `mine` narrows the tasks counted to those
 * the phase made, by an indexed column, where the database holds others.
 */
export async function drainBacklog(ctx: Context, session: Session, label: string, mine = 'true'): Promise<DrainResult> {
  const tasks = counter(session.databaseUrl, ctx.cleanup);
  try {
    const backlog = await tasks.count(`select count(*) from tasks where state = 'pending' and ${mine}`);
    ctx.say(`work and forward a backlog of ${backlog.toLocaleString('en-US')} tasks…`);
    const sentBefore = await receivedBefore(session.downstream);
    const worker = await session.start('worker', `oncehook ${label} (worker)`);
    const work = await measureDrain(ctx, {
      backlog,
      downstream: session.downstream,
      sentBefore,
      capMs: ctx.options.duration * 1000 * 3,
      completed: () => tasks.count(`select count(*) from tasks where state = 'succeeded' and ${mine}`),
      worker: worker.child.pid,
    });
    await worker.stop();
    return work;
  } finally {
    await tasks.close();
  }
}
