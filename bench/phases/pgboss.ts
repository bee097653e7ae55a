/**
 * (c) The peer a user might build on instead: pg-boss sending one job per delivery, then working the
 * backlog and forwarding each job to the same downstream. Its work-and-forward rate is what oncehook's
 * forwarding is compared with.
 */
import { forkTs, nextMessage, type Child } from '../children.ts';
import type { BossCommand, BossMessage } from '../pgboss/protocol.ts';
import { QUEUE } from '../pgboss/protocol.ts';
import { counter, freshDatabase } from '../postgres.ts';
import { startDownstream } from '../servers/start.ts';
import type { Context, PgBossResult } from './context.ts';
import { measureDrain, measureIdleLatency, receivedBefore, settle } from './drain.ts';

const RUNNER = new URL('../pgboss/runner.ts', import.meta.url);

function ask<T extends BossMessage['type']>(runner: Child, command: BossCommand, answer: T) {
  runner.process.send(command);
  return nextMessage(runner, (m): m is Extract<BossMessage, { type: T | 'failed' }> =>
    [answer, 'failed'].includes((m as BossMessage).type),
  ).then((m) => {
    if (m.type === 'failed') throw new Error(`pg-boss runner: ${(m as { message: string }).message}`);
    return m as Extract<BossMessage, { type: T }>;
  });
}

export async function runPgBoss(ctx: Context): Promise<PgBossResult> {
  const { options } = ctx;
  const database = await freshDatabase(options.pgUrl, 'pgboss', ctx.cleanup);
  const databaseUrl = database.url;
  const downstream = await startDownstream(ctx.cleanup);
  const runner = forkTs('pg-boss', RUNNER, ctx.cleanup);
  runner.process.on('message', (m: BossMessage) => {
    if (m.type === 'progress') ctx.say(`send ${m.line}`);
  });
  try {
    const spec = {
      databaseUrl,
      downstreamOrigin: downstream.origin,
      concurrency: options.concurrency,
      warmupMs: options.warmup * 1000,
      durationMs: options.duration * 1000,
      batchSize: options.bossBatchSize,
      workers: options.bossWorkers,
      bodyBytes: options.bodyBytes,
      progressMs: 2000,
    };
    const { figures } = await ask(runner, { type: 'send', spec }, 'sent');
    ctx.say(`work and forward a backlog of ${figures.backlog.toLocaleString('en-US')} jobs…`);
    const jobs = counter(databaseUrl, ctx.cleanup);
    const completed = () => jobs.count(`select count(*) from pgboss.job where name = '${QUEUE}' and state = 'completed'`);
    const sentBefore = await receivedBefore(downstream);
    await ask(runner, { type: 'work' }, 'working');
    const work = await measureDrain(ctx, {
      backlog: figures.backlog,
      downstream,
      sentBefore,
      capMs: options.duration * 1000 * 3,
      completed,
      worker: runner.pid,
    });
    let idleFirstForward = null;
    if (work.drained || (await settle(figures.backlog, completed))) {
      ctx.say('idle first-forward latency…');
      idleFirstForward = await measureIdleLatency(downstream, async (marker) => (await ask(runner, { type: 'probe', marker }, 'probed')).sentAt);
    }
    await jobs.close();
    return {
      version: figures.version,
      settings: {
        batchSize: options.bossBatchSize,
        workers: options.bossWorkers,
        pollingIntervalSeconds: figures.pollingIntervalSeconds,
        poolMax: figures.poolMax,
      },
      send: { perSecond: figures.perSecond, latencyMs: figures.latencyMs, errors: figures.errors },
      work,
      idleFirstForward,
    };
  } finally {
    await runner.stop();
    await downstream.stop();
    await database.drop();
  }
}
