import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/connect.ts';
import { LOCK_FILE } from '../../src/store/data-dir-lock.ts';
import { ADMIN_TOKEN, adminApi } from '../support/admin.ts';
import { readCopy } from '../support/data-dir-copy.ts';
import { post, shopConfig, shopifyDelivery, type Delivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { freshPostgresDatabase, type TestDatabase } from '../support/engine.ts';
import { waitFor } from '../support/forwarding.ts';
import { runCli, spawnGateway, type GatewayProcess } from '../support/process.ts';
import { everyRow } from '../support/table-rows.ts';
import { startProxy, type FaultyProxy } from '../support/tcp-proxy.ts';
import { treeHash } from '../support/tree-hash.ts';

/**
 * Issue 28's move, with real processes: a gateway on the embedded default receives and forwards, is killed with an
 * attempt in flight, `oncehook copy-data` copies its directory into PostgreSQL, and a gateway on PostgreSQL carries
 * on from there as the embedded one would have after a restart.
 */
describe('moving from the embedded default to PostgreSQL with copy-data', () => {
  const dir = mkdtempSync(join(tmpdir(), 'oncehook-move-'));
  const dataDir = join(dir, 'data');
  const configFile = join(dir, 'config.json');
  let downstream: Downstream;
  /** In front of the `later` action's downstream: refused while the embedded gateway runs, so its tasks wait. */
  let later: FaultyProxy;
  let database: TestDatabase;
  let gateway: GatewayProcess | undefined;

  const backoff = { initialMs: 50, maxMs: 200 };
  // A short grace, so the gateway on PostgreSQL reclaims the dead one's lease in seconds.
  const env = (databaseUrl: string | undefined) => ({
    DATABASE_URL: databaseUrl,
    ONCEHOOK_DATA_DIR: dataDir,
    ONCEHOOK_ADMIN_TOKEN: ADMIN_TOKEN,
    ONCEHOOK_LEASE_GRACE_MS: '300',
  });
  const copyData = () => runCli(['copy-data', '--to', database.url!], { ONCEHOOK_DATA_DIR: dataDir });

  beforeAll(async () => {
    [downstream, database] = await Promise.all([startDownstream(), freshPostgresDatabase()]);
    later = await startProxy('127.0.0.1', Number(new URL(downstream.url).port));
    await later.refuse();
    downstream.script('/crm', { honourKey: true });
    downstream.script('/gated', { honourKey: true });
    // The first send is never answered; a resend under its key is answered from the effect it made.
    downstream.script('/held', { steps: ['hang'], honourKey: true });
    // Its effect is unknown, and its lookup cannot tell: only a person may settle it.
    downstream.script('/unknown', { otherwise: { status: 500 }, lookup: Array.from({ length: 50 }, () => ({ status: 503 })) });
    const config = shopConfig({
      crm: { url: `${downstream.url}/crm`, idempotency: 'key', topics: ['orders/create'], backoff },
      // Tried every second or so while its downstream is down: far from the 100 attempts that would fail it.
      later: { url: `http://127.0.0.1:${later.port}/later`, idempotency: 'key', topics: ['orders/later'], backoff: { initialMs: 1000, maxMs: 2000 }, maxAttempts: 100 },
      gated: { url: `${downstream.url}/gated`, idempotency: 'key', topics: ['orders/gated'], approval: 'required', backoff },
      held: { url: `${downstream.url}/held`, idempotency: 'key', topics: ['orders/held'], timeoutMs: 2000, backoff },
      // A minute's backoff: the lookup is asked at most once or twice while the test runs, and never settles it.
      unknown: { url: `${downstream.url}/unknown`, lookup: `${downstream.url}/unknown/lookup?key={key}`, topics: ['orders/unknown'], backoff: { initialMs: 60_000, maxMs: 60_000 } },
    });
    writeFileSync(configFile, JSON.stringify(config));
  });

  afterAll(async () => {
    await gateway?.kill();
    await Promise.all([downstream?.close(), later?.close(), database?.drop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  const deliveries: Record<string, Delivery> = {};
  const send = async (url: string, name: string, topic: string) => {
    deliveries[name] = shopifyDelivery({ eventId: `move-${name}`, topic });
    const answer = await post(url, 'shop', deliveries[name]);
    expect(answer.json.decision, name).toBe('accepted');
    return answer.json.tasks[0].id as string;
  };
  const taskOf = (url: string, id: string) => adminApi(url)(`/api/tasks/${id}`).then((answer) => answer.json);

  it('carries deliveries, tasks, the ledger and decisions over, and the gateway on PostgreSQL carries on', { timeout: 240_000 }, async () => {
    // 1. The embedded gateway receives, forwards, and a person decides.
    gateway = await spawnGateway({ args: ['--config', configFile], env: env(undefined) });
    const embedded = gateway.url;
    const api = adminApi(embedded);
    const crm = [await send(embedded, 'crm-1', 'orders/create'), await send(embedded, 'crm-2', 'orders/create')];
    const waiting = [await send(embedded, 'later-1', 'orders/later'), await send(embedded, 'later-2', 'orders/later')];
    const [approved, cancelled] = [await send(embedded, 'gated-1', 'orders/gated'), await send(embedded, 'gated-2', 'orders/gated')];
    const unknown = await send(embedded, 'unknown-1', 'orders/unknown');
    expect((await post(embedded, 'shop', deliveries['crm-1']!)).json.decision).toBe('duplicate_delivery');
    expect((await api(`/api/tasks/${approved}/approve`, { body: { note: 'checked the order' } })).status).toBe(200);
    expect((await api(`/api/tasks/${cancelled}/cancel`, { body: { note: 'a test order' } })).status).toBe(200);
    await waitFor(() => downstream.effects('/crm').length === 2 && downstream.effects('/gated').length === 1, 20_000);
    await waitFor(async () => (await taskOf(embedded, unknown)).state === 'outcome_unknown', 20_000);
    // The downstream of `later` is down: each of its tasks has been tried, and waits.
    await waitFor(async () => {
      const views = await Promise.all(waiting.map((id) => taskOf(embedded, id)));
      return views.every((v) => v.state === 'pending' && v.attempts > 0);
    }, 20_000);
    const held = await send(embedded, 'held-1', 'orders/held');
    await waitFor(() => downstream.open().some((open) => open.path === '/held'), 20_000);

    // 2. copy-data will not copy from under a running gateway.
    const whileRunning = await copyData();
    expect(whileRunning.code).toBe(1);
    expect(whileRunning.stderr).toMatch(/stop the gateway before copying its data: the embedded database in .* is in use by process \d+/);

    // 3. The gateway dies with the `held` attempt in flight: its lease stays in the directory.
    await gateway.kill();
    gateway = undefined;
    // The dead gateway's lock is the one file copy-data changes: it takes it over, as the next start would, and
    // removes its own when done.
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(true);
    const before = treeHash(dataDir, [LOCK_FILE]);
    const copied = await copyData();
    expect(copied.code, copied.stderr).toBe(0);
    expect(copied.stdout).toMatch(/each table's row count and checksum match the data directory's/);
    expect(copied.stdout).toMatch(/DATABASE_URL='postgres:\/\/…@127\.0\.0\.1:5432\/oncehook_t_\w+' npm start/);
    expect(treeHash(dataDir, [LOCK_FILE])).toBe(before);
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);

    // Row for row, the ledger and the operator actions among them.
    const source = await readCopy(dataDir, everyRow);
    const store = await openStore({ databaseUrl: database.url!, poolSize: 1 });
    try {
      expect(await everyRow(store.db)).toEqual(source);
    } finally {
      await store.close();
    }
    expect(copied.stderr).toContain(`copy-data: deliveries: ${source.deliveries!.length} rows\n`);
    expect(source.operator_actions).toHaveLength(2);
    expect(source.attempts!.length).toBeGreaterThan(5);
    expect(source.tasks!.some((row) => JSON.parse(row).state === 'in_progress')).toBe(true);

    const again = await copyData();
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already holds oncehook data/);

    // 4. The gateway on PostgreSQL, and the `later` downstream back.
    gateway = await spawnGateway({ args: ['--config', configFile], env: env(database.url) });
    const moved = gateway.url;
    await later.restore();

    // What was accepted before is a duplicate: the same delivery, or the same event under another delivery ID.
    const resent = await post(moved, 'shop', deliveries['crm-1']!);
    expect(resent.json.decision).toBe('duplicate_delivery');
    expect(resent.json.firstSeen.deliveryId).toBe(deliveries['crm-1']!.headers['x-shopify-webhook-id']);
    const sameEvent = await post(moved, 'shop', shopifyDelivery({ eventId: 'move-crm-2', topic: 'orders/create' }));
    expect(sameEvent.json.decision).toBe('duplicate_event');

    // Pending tasks are forwarded from here, each once; the lease held when the gateway died is reclaimed, and the
    // resend under its key makes no second effect.
    await waitFor(async () => (await Promise.all([...waiting, held].map((id) => taskOf(moved, id)))).every((v) => v.state === 'succeeded'), 30_000);
    expect(downstream.effects('/later').map((e) => e.key).sort()).toEqual([...waiting].sort());
    expect(downstream.effects('/held').map((e) => e.key)).toEqual([held]);
    expect((await taskOf(moved, held)).ledger.map((a: { class: string }) => a.class)).toContain('lease_expired');
    // Nothing sent before is sent again; an unknown outcome stays unknown.
    expect(downstream.effects('/crm').map((e) => e.key).sort()).toEqual([...crm].sort());
    expect(downstream.effects('/gated').map((e) => e.key)).toEqual([approved]);
    const stillUnknown = await taskOf(moved, unknown);
    expect(stillUnknown.state).toBe('outcome_unknown');
    expect(downstream.requests('/unknown').filter((r) => r.method === 'POST')).toHaveLength(1);
    // The decisions people made are there, under their names.
    expect((await taskOf(moved, approved)).operatorActions.map((a: { kind: string; note: string }) => [a.kind, a.note])).toEqual([['approve', 'checked the order']]);
    // And the admin lists show the copied deliveries at once.
    const listed = await adminApi(moved)('/api/deliveries?limit=100');
    expect(listed.json.items).toHaveLength(source.deliveries!.length + 2);
  });
});
