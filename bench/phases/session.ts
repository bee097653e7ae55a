import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startGateway, writeConfig, type Role, type RunningGateway } from '../gateway.ts';
import { freshDatabase, queryOnce, type BenchDatabase } from '../postgres.ts';
import { startDownstream, type Downstream } from '../servers/start.ts';
import type { Context } from './context.ts';
import type { ActionShape } from './shaped-cost.ts';

export interface Session {
  readonly databaseUrl: string;
  readonly downstream: Downstream;
  readonly configFile: string;
  /**
   * Starts a gateway on this session's database; stopped with the session if not before. It forwards with
   * `--worker-concurrency` attempts in flight unless `concurrency` says otherwise (null: serve's own default).
   */
  start(role: Role, name?: string, concurrency?: number | null): Promise<RunningGateway>;
  count(sql: string): Promise<number>;
}

/** What a phase's world has besides the usual: a database already holding something, the admin API on. */
export interface SessionOptions {
  /** Makes the session's database, dropped when the session ends; a fresh, empty one when unset. */
  database?: () => Promise<BenchDatabase>;
  /** Every gateway's `ONCEHOOK_ADMIN_TOKEN`: the admin API and the dashboard on. */
  adminToken?: string;
}

/**
 * A phase's own world: a fresh database, a downstream for the configured action, and whatever gateways the
 * phase starts on them — all stopped and dropped when the phase ends, so no phase measures another's leftovers.
 */
export async function withSession<T>(
  ctx: Context,
  phase: string,
  run: (session: Session) => Promise<T>,
  shape: ActionShape = {},
  options: SessionOptions = {},
): Promise<T> {
  const database = await (options.database ?? (() => freshDatabase(ctx.options.pgUrl, phase, ctx.cleanup)))();
  const databaseUrl = database.url;
  const downstream = await startDownstream(ctx.cleanup);
  const gateways: RunningGateway[] = [];
  const configFile = writeConfig(ctx.tmpDir, downstream.origin, shape, phase.replace(/[^a-z0-9-]/g, '-'));
  try {
    return await run({
      databaseUrl,
      downstream,
      configFile,
      async start(role, name = `oncehook ${phase}`, concurrency = ctx.options.workerConcurrency) {
        const gateway = await startGateway({
          name,
          configFile,
          databaseUrl,
          role,
          logFile: join(ctx.tmpDir, `${phase}-${gateways.length}.log`),
          logLevel: ctx.options.gatewayLogLevel,
          concurrency: concurrency ?? undefined,
          profileDir: ctx.profileDir,
          sources: ctx.options.sources,
          adminToken: options.adminToken,
          cleanup: ctx.cleanup,
        });
        gateways.push(gateway);
        return gateway;
      },
      async count(sql) {
        const [row] = await queryOnce<{ n: number }>(databaseUrl, `select (${sql})::int as n`);
        return row!.n;
      },
    });
  } finally {
    for (const gateway of gateways.reverse()) {
      await gateway.stop();
      for (const line of loggedErrors(gateway.logFile)) ctx.say(`${gateway.child.name} logged: ${line}`);
    }
    await downstream.stop();
    await database.drop();
  }
}

/** The first few error lines a gateway logged: its log is removed with the run, and an error should not go unseen. */
function loggedErrors(file: string, limit = 3): string[] {
  const errors = readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => /"level":(50|60)\b/.test(line));
  const shown = errors.slice(0, limit).map((line) => line.slice(0, 400));
  if (errors.length > limit) shown.push(`… and ${errors.length - limit} more error lines`);
  return shown;
}
