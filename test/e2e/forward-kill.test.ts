import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Db, type Store } from '../../src/store/connect.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { ADMIN_TOKEN, adminApi } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { readCopy } from '../support/data-dir-copy.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { freshPostgresDatabase } from '../support/engine.ts';
import { waitFor } from '../support/forwarding.ts';
import { SETTLED, unsettledInStats } from '../support/invariants.ts';
import { spawnGateway, type GatewayProcess } from '../support/process.ts';

/** The downstream commits each effect at once and answers late, so a kill lands between the two. */
const SLOW = { status: 201, delayMs: 400 } as const;

/** Where the gateway stores, and how the test reads it. */
interface Place {
  env: Record<string, string | undefined>;
  /** Reads the store as the kill left it, leaving its recovery to the restarted gateway (see readCopy). */
  afterKill<T>(read: (db: Db) => Promise<T>): Promise<T>;
  /** Opens the store once no gateway runs on it. */
  open(): Promise<Store>;
  drop(): Promise<void>;
}

const engines: { name: string; place(): Promise<Place> }[] = [
  {
    name: 'PostgreSQL',
    async place() {
      const database = await freshPostgresDatabase();
      const open = () => openStore({ databaseUrl: database.url! });
      return {
        env: { DATABASE_URL: database.url },
        async afterKill(read) {
          const store = await open();
          return read(store.db).finally(() => store.close());
        },
        open,
        drop: () => database.drop(),
      };
    },
  },
  {
    name: 'embedded PGlite (npm start)',
    async place() {
      const root = mkdtempSync(join(tmpdir(), 'oncehook-kill-pglite-'));
      const dataDir = join(root, 'data');
      return {
        env: { DATABASE_URL: undefined, ONCEHOOK_DATA_DIR: dataDir },
        afterKill: (read) => readCopy(dataDir, read),
        open: () => openStore({ dataDir }),
        drop: async () => rmSync(root, { recursive: true, force: true }),
      };
    },
  },
];

const count = async (db: Db, query: ReturnType<typeof sql>) => (await rowsOf<{ n: number }>(db, query))[0]!.n;

describe.each(engines)('kill -9 while attempts are in flight, then restart, on $name', ({ place: makePlace }) => {
  let place: Place;
  let downstream: Downstream;
  let gateway: GatewayProcess | undefined;
  let configFile: string;

  beforeAll(async () => {
    [place, downstream] = await Promise.all([makePlace(), startDownstream()]);
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
    await place?.drop();
  });

  // A short lease grace so the restarted worker reclaims the dead one's leases in seconds, not 30. Not shorter: the
  // restarted worker's own leases must outlive a renewal (every third of the lease) held up by a starved machine,
  // or they expire too and the ledger counts more `lease_expired` than the kill left (24 against 21 with 300 ms,
  // once, under a load of 5 on two cores).
  const start = () =>
    spawnGateway({ args: ['--config', configFile], env: { ...place.env, ONCEHOOK_LEASE_GRACE_MS: '1000', ONCEHOOK_ADMIN_TOKEN: ADMIN_TOKEN } });

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

    const inFlight = await place.afterKill((db) => count(db, sql`select count(*)::int as n from tasks where state = 'in_progress'`));
    expect(inFlight).toBeGreaterThan(0);

    // The restarted gateway recovers the store itself (on PGlite: replays its log) and settles every task.
    gateway = await start();
    const api = adminApi(gateway.url);
    await waitFor(async () => (await unsettledInStats(api)) === 0, 30_000);
    await gateway.stop();
    gateway = undefined;

    const store = await place.open();
    try {
      const states = await rowsOf<{ id: string; action: string; state: string }>(store.db, sql`select id, action, state from tasks`);
      expect(states.filter((row) => !SETTLED.includes(row.state))).toEqual([]);
      const stored = new Map(states.map((row) => [row.id, row]));
      expect(accepted.length).toBeGreaterThan(0);
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
      expect(await count(store.db, sql`select count(*)::int as n from attempts where class = 'lease_expired'`)).toBe(inFlight);
    } finally {
      await store.close();
    }
  });
});
