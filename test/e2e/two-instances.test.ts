import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { freshPostgresDatabase, type TestDatabase } from '../support/engine.ts';
import { spawnGateway, type GatewayProcess } from '../support/process.ts';

// Two gateway processes on one PostgreSQL: their start-up migrations race, and storms of one delivery split
// across both still make exactly one decision "accepted".
describe('two instances on one PostgreSQL', () => {
  let database: TestDatabase;
  let instances: GatewayProcess[] = [];

  beforeAll(async () => {
    database = await freshPostgresDatabase();
    const configFile = join(mkdtempSync(join(tmpdir(), 'oncehook-two-')), 'config.json');
    writeFileSync(configFile, JSON.stringify(shopConfig()));
    instances = await Promise.all(
      [0, 1].map(() => spawnGateway({ args: ['--config', configFile], env: { DATABASE_URL: database.url } })),
    );
  });
  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.stop()));
    await database?.drop();
  });

  it('both started and migrated once', async () => {
    const sql = postgres(database.url!, { max: 1 });
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`;
    await sql.end();
    expect(row!.n).toBeGreaterThan(0);
    for (const instance of instances) expect((await fetch(`${instance.url}/readyz`)).status).toBe(200);
  });

  it('a storm of one delivery split across both: one accepted, one task', async () => {
    const delivery = shopifyDelivery({ eventId: 'e-split', webhookId: 'w-split' });
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) => post(instances[i % 2]!.url, 'shop', delivery)),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(answers.filter((a) => a.json.decision === 'accepted')).toHaveLength(1);
    expect(new Set(answers.map((a) => a.json.tasks[0].id)).size).toBe(1);

    const sql = postgres(database.url!, { max: 1 });
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from tasks where event_id = 'e-split'`;
    await sql.end();
    expect(row!.n).toBe(1);
  });

  it('one event through many subscriptions on both: one accepted', async () => {
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        post(instances[i % 2]!.url, 'shop', shopifyDelivery({ eventId: 'e-split-subs', webhookId: `sub-${i}` })),
      ),
    );
    expect(answers.filter((a) => a.json.decision === 'accepted')).toHaveLength(1);
    expect(answers.filter((a) => a.json.decision === 'duplicate_event')).toHaveLength(59);
  });
});
