import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type postgres from 'postgres';
import { startDownstream, type Downstream } from './downstream.ts';
import { freshPostgresDatabase, type TestDatabase } from './engine.ts';
import { waitFor } from './forwarding.ts';
import { spawnGateway, type GatewayProcess } from './process.ts';

/** Gateways on one PostgreSQL database, in front of one downstream, all from one config file. */
export interface Instances {
  database: TestDatabase;
  downstream: Downstream;
  instances: GatewayProcess[];
  close(): Promise<void>;
}

/** Starts `count` gateways at once on a fresh database, each with `env` beside DATABASE_URL. */
export async function startInstances(count: number, config: (downstream: Downstream) => object, env: Record<string, string> = {}): Promise<Instances> {
  const [database, downstream] = await Promise.all([freshPostgresDatabase(), startDownstream()]);
  const configFile = join(mkdtempSync(join(tmpdir(), 'oncehook-instances-')), 'config.json');
  writeFileSync(configFile, JSON.stringify(config(downstream)));
  const instances = await Promise.all(
    Array.from({ length: count }, () => spawnGateway({ args: ['--config', configFile], env: { DATABASE_URL: database.url, ...env } })),
  );
  return {
    database,
    downstream,
    instances,
    async close() {
      await Promise.all(instances.map((instance) => instance.stop()));
      await downstream.close();
      await database.drop();
    },
  };
}

/** Kills `victim` with -9 once it holds at least `leases` attempts in flight: the lease owner names its pid. */
export async function killHoldingLeases(sql: postgres.Sql, victim: GatewayProcess, leases = 2): Promise<void> {
  await waitFor(async () => {
    const [held] = await sql<{ n: number }[]>`
      select count(*)::int as n from tasks where state = 'in_progress' and lease_owner like ${`%/${victim.child.pid}/%`}`;
    return held!.n >= leases || undefined;
  }, 20_000);
  await victim.kill();
}
