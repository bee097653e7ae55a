import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { freshPostgresDatabase, type TestDatabase } from '../support/engine.ts';
import { waitFor } from '../support/forwarding.ts';
import { spawnGateway, type GatewayProcess } from '../support/process.ts';

/** The downstream commits each effect at once and answers late, so a kill lands between the two. */
const SLOW = { status: 201, delayMs: 400 } as const;
const SETTLED = ['succeeded', 'failed', 'needs_review', 'cancelled'];

describe('kill -9 while attempts are in flight, then restart', () => {
  let database: TestDatabase;
  let downstream: Downstream;
  let gateway: GatewayProcess | undefined;
  let configFile: string;

  beforeAll(async () => {
    [database, downstream] = await Promise.all([freshPostgresDatabase(), startDownstream()]);
    const action = (path: string, extra: object) => ({ url: `${downstream.url}${path}`, timeoutMs: 2000, backoff: { initialMs: 20, maxMs: 200 }, ...extra });
    configFile = join(mkdtempSync(join(tmpdir(), 'oncehook-kill-')), 'config.json');
    writeFileSync(
      configFile,
      JSON.stringify(
        shopConfig({
          keyed: action('/keyed', { idempotency: 'key' }),
          plain: action('/plain', {}),
          looked: action('/looked', { lookup: `${downstream.url}/looked/lookup?key={key}` }),
        }),
      ),
    );
    for (const path of ['/keyed', '/plain', '/looked']) downstream.script(path, { otherwise: SLOW, honourKey: path === '/keyed' });
  });
  afterAll(async () => {
    await gateway?.stop();
    await downstream?.close();
    await database?.drop();
  });

  // A short lease grace so the restarted worker reclaims the dead one's leases in seconds, not 30.
  const start = () => spawnGateway({ args: ['--config', configFile], env: { DATABASE_URL: database.url, ONCEHOOK_LEASE_GRACE_MS: '300' } });

  it('loses no accepted task, and never sends a non-idempotent action without lookup twice', async () => {
    gateway = await start();
    const first = gateway;

    // Deliveries keep arriving until the kill; only the ones answered "accepted" are promises to keep.
    const accepted: string[] = [];
    let killed = false;
    const sender = (async () => {
      for (let i = 0; !killed; i++) {
        const answer = await post(first.url, 'shop', shopifyDelivery({ eventId: `kill-${i}` })).catch(() => null);
        if (answer?.json?.decision === 'accepted') accepted.push(...answer.json.tasks.map((t: { id: string }) => t.id));
      }
    })();
    await waitFor(() => downstream.requests().length >= 12);
    await first.kill();
    killed = true;
    await sender;

    const sql = postgres(database.url!, { max: 1, onnotice: () => {} });
    try {
      const [inFlight] = await sql<{ n: number }[]>`select count(*)::int as n from tasks where state = 'in_progress'`;
      expect(inFlight!.n).toBeGreaterThan(0);

      gateway = await start();
      const states = await waitFor(async () => {
        const rows = await sql<{ id: string; action: string; state: string }[]>`select id, action, state from tasks`;
        return rows.every((row) => SETTLED.includes(row.state)) ? rows : undefined;
      }, 30_000);

      const stored = new Map(states.map((row) => [row.id, row]));
      expect(accepted.filter((id) => !stored.has(id))).toEqual([]);

      const sends = (path: string, id: string) => downstream.requests(path).filter((r) => r.method === 'POST' && r.headers['idempotency-key'] === id).length;
      const effects = (path: string, id: string) => downstream.effects(path).filter((e) => e.key === id).length;
      for (const row of states) {
        if (row.action === 'plain') {
          expect(sends('/plain', row.id), `plain task ${row.id} was sent twice`).toBeLessThanOrEqual(1);
          expect(row.state).toMatch(/^(succeeded|needs_review)$/);
        } else {
          expect(row.state, `${row.action} task ${row.id}`).toBe('succeeded');
          expect(effects(`/${row.action}`, row.id), `${row.action} task ${row.id}`).toBe(1);
        }
      }
      const [reclaimed] = await sql<{ n: number }[]>`select count(*)::int as n from attempts where class = 'lease_expired'`;
      expect(reclaimed!.n).toBe(inFlight!.n);
    } finally {
      await sql.end();
    }
  });
});
