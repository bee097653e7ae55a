import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { freshPostgresDatabase, type TestDatabase } from '../support/engine.ts';
import { waitFor } from '../support/forwarding.ts';
import { killHoldingLeases } from '../support/instances.ts';
import { spawnGateway, type GatewayProcess } from '../support/process.ts';

const INSTANCES = 3;
const EVENTS = 40;
/** Every event arrives this many times: the sender's retries and a second subscription, across all instances. */
const COPIES = 8;
const SETTLED = ['succeeded', 'failed', 'needs_review', 'cancelled'];

// Scale-out on one PostgreSQL (`npm run test:multi`): three instances start at once (their migrations race),
// storms of duplicates are spread across them, and one is killed with -9 mid-flight. PostgreSQL alone
// coordinates them: unique keys, SKIP LOCKED claims, leases.
describe(`${INSTANCES} instances on one PostgreSQL`, () => {
  let database: TestDatabase;
  let downstream: Downstream;
  let instances: GatewayProcess[] = [];

  beforeAll(async () => {
    [database, downstream] = await Promise.all([freshPostgresDatabase(), startDownstream()]);
    const action = (path: string, extra: object) => ({
      url: `${downstream.url}${path}`,
      timeoutMs: 2000,
      backoff: { initialMs: 20, maxMs: 200 },
      ...extra,
    });
    const configFile = join(mkdtempSync(join(tmpdir(), 'oncehook-multi-')), 'config.json');
    writeFileSync(configFile, JSON.stringify(shopConfig({ keyed: action('/keyed', { idempotency: 'key' }), plain: action('/plain', {}) })));
    // Effects are committed at once and answered late, so the kill lands between the two for some of them.
    for (const path of ['/keyed', '/plain']) downstream.script(path, { otherwise: { status: 201, delayMs: 300 }, honourKey: path === '/keyed' });
    instances = await Promise.all(
      Array.from({ length: INSTANCES }, () =>
        // Few slots each, fewer in all than the tasks: every instance, the victim included, is kept busy.
        spawnGateway({
          args: ['--config', configFile],
          env: { DATABASE_URL: database.url, ONCEHOOK_LEASE_GRACE_MS: '300', ONCEHOOK_CONCURRENCY: '8' },
        }),
      ),
    );
  });
  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.stop()));
    await downstream?.close();
    await database?.drop();
  });

  it('one task per business key, one effect per keyed task, no blind resend, through a kill -9', async () => {
    const sql = postgres(database.url!, { max: 1, onnotice: () => {} });
    try {
      const [migrations] = await sql<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`;
      // Three instances migrated at once: each migration is applied exactly once.
      const journal = JSON.parse(readFileSync(new URL('../../src/store/migrations/meta/_journal.json', import.meta.url), 'utf8'));
      expect(migrations!.n).toBe(journal.entries.length);

      const acknowledged = new Set<string>();
      const victim = instances[0]!;
      const sends = Array.from({ length: EVENTS * COPIES }, (_, i) => {
        const event = i % EVENTS;
        const copy = Math.floor(i / EVENTS);
        // Half the copies retry one delivery; the rest come from a second subscription with its own ID.
        const delivery = shopifyDelivery({ eventId: `m-${event}`, webhookId: `w-${event}-${copy % 2}` });
        return post(instances[i % INSTANCES]!.url, 'shop', delivery).then(
          (answer) => answer.status === 200 && acknowledged.add(`m-${event}`),
          () => undefined,
        );
      });
      // Kill the victim while it holds leases of attempts in flight: the owner names its pid.
      await killHoldingLeases(sql, victim);
      await Promise.all(sends);

      const rows = await waitFor(async () => {
        const all = await sql<{ id: string; action: string; state: string; event_id: string }[]>`
          select id, action, state, event_id from tasks`;
        return all.length > 0 && all.every((row) => SETTLED.includes(row.state)) ? all : undefined;
      }, 45_000);

      // Every event had copies on the survivors, so each was acknowledged at least once.
      expect(acknowledged.size).toBe(EVENTS);
      const byEvent = new Map<string, string[]>();
      for (const row of rows) byEvent.set(row.event_id, [...(byEvent.get(row.event_id) ?? []), row.action]);
      for (const event of acknowledged) expect(byEvent.get(event)?.sort(), `tasks of ${event}`).toEqual(['keyed', 'plain']);

      for (const row of rows) {
        const posts = (path: string) =>
          downstream.requests(path).filter((r) => r.method === 'POST' && r.headers['idempotency-key'] === row.id).length;
        if (row.action === 'keyed') {
          expect(row.state, `keyed task ${row.id}`).toBe('succeeded');
          expect(downstream.effects('/keyed').filter((e) => e.key === row.id), `effects of ${row.id}`).toHaveLength(1);
        } else {
          expect(posts('/plain'), `plain task ${row.id} was sent twice`).toBeLessThanOrEqual(1);
          expect(row.state).toMatch(/^(succeeded|needs_review)$/);
        }
      }
      const [reclaimed] = await sql<{ n: number }[]>`select count(*)::int as n from attempts where class = 'lease_expired'`;
      expect(reclaimed!.n).toBeGreaterThanOrEqual(2);
    } finally {
      await sql.end();
    }
  });
});
