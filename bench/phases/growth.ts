/**
 * Growth: do ingest, forwarding and the dashboard's home slow down once the database holds `--tasks` (10,000,000)
 * tasks of finished history? The same measurement three times — on a fresh database, on a copy of the cached history
 * (history/template.ts), on a fresh database again — each: the ingest load against a `web` gateway, its backlog drained by a `worker` as in (d),
 * then the dashboard's home and `/api/stats` read by a newly started `web` gateway. PostgreSQL only.
 */
import { randomBytes } from 'node:crypto';
import { historyTemplate, writeLastDay, type HistoryTemplate } from '../history/template.ts';
import { watchedLoad } from '../load/run.ts';
import { freshDatabase, queryOnce } from '../postgres.ts';
import { progressLine, type Context, type DrainResult } from './context.ts';
import type { LoadResult } from '../load/protocol.ts';
import type { CpuShares } from '../proc.ts';
import { timeDashboard, type DashboardRead } from './dashboard-reads.ts';
import { drainBacklog } from './forward-variant.ts';
import { closedLoop } from './load-spec.ts';
import { withSession } from './session.ts';

export interface GrowthSide {
  /** Tasks in the database before the load. */
  history: number;
  /** How long making the database took: a copy of the template and its last day; 0 for an empty one. */
  preparedMs: number;
  ingest: LoadResult;
  ingestCpu: CpuShares | null;
  drain: DrainResult;
  reads: DashboardRead[];
}

export interface GrowthResult {
  tasks: number;
  template: HistoryTemplate;
  /** A fresh database before the history, and another after it: a machine that speeds up or slows down weighs on both. */
  fresh: GrowthSide;
  freshAfter?: GrowthSide;
  history: GrowthSide;
  /** The history's accepted/s and forwarded/s ÷ the fresh databases' mean. */
  ingestRatio: number | null;
  forwardRatio: number | null;
}

export async function runGrowth(ctx: Context): Promise<GrowthResult> {
  const tasks = ctx.options.tasks;
  const template = await historyTemplate(ctx.options.pgUrl, tasks, ctx.say);
  ctx.say('on a fresh database…');
  const fresh = await measureSide(ctx, 'growth-fresh', null);
  ctx.say(`on ${tasks.toLocaleString('en-US')} tasks of history…`);
  const history = await measureSide(ctx, 'growth-history', template);
  ctx.say('on a fresh database again…');
  const freshAfter = await measureSide(ctx, 'growth-fresh-after', null);
  const ratio = (a: number, b: number) => (b > 0 ? a / b : null);
  const mean = (of: (side: GrowthSide) => number) => (of(fresh) + of(freshAfter)) / 2;
  return {
    tasks,
    template,
    fresh,
    freshAfter,
    history,
    ingestRatio: ratio(history.ingest.acceptedPerSecond, mean((side) => side.ingest.acceptedPerSecond)),
    forwardRatio: ratio(history.drain.perSecond, mean((side) => side.drain.perSecond)),
  };
}

async function measureSide(ctx: Context, label: string, template: HistoryTemplate | null): Promise<GrowthSide> {
  const token = randomBytes(24).toString('base64url');
  let preparedMs = 0;
  const database = async () => {
    const started = performance.now();
    const made = await freshDatabase(ctx.options.pgUrl, label, ctx.cleanup, template?.name);
    if (template) {
      ctx.say(`copied the template in ${((performance.now() - started) / 1000).toFixed(0)} s; writing its last day…`);
      await writeLastDay(made.url, template.tasks, ctx.say);
    }
    preparedMs = performance.now() - started;
    return made;
  };
  return withSession(
    ctx,
    label,
    async (session) => {
      // Started first: on a fresh database the gateway makes the tables.
      const web = await session.start('web', `oncehook ${label} (web)`);
      const history = await session.count('select count(*) from tasks');
      // The load's tasks are those made from now on: counted on tasks_state_idx from here, never through the history.
      const since = (await queryOnce<{ at: string }>(session.databaseUrl, 'select now()::text as at'))[0]!.at;
      const { load: ingest, cpu: ingestCpu } = await watchedLoad(closedLoop(ctx, { label, origin: web.url }), ctx.cleanup, { gateway: web.child.pid }, {
        onProgress: (p) => ctx.say(`ingest ${progressLine(p)}`),
      });
      await web.stop();
      const drain = await drainBacklog(ctx, session, label, `created_at >= '${since}'::timestamptz`);
      ctx.say("the dashboard's home, from a gateway just started…");
      const reader = await session.start('web', `oncehook ${label} (dashboard)`);
      const reads = await timeDashboard(reader.url, token);
      await reader.stop();
      return { history, preparedMs, ingest, ingestCpu, drain, reads };
    },
    {},
    { database, adminToken: token },
  );
}
