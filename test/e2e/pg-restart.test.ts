import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/connect.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { post, shopConfig, shopifyDelivery, type Delivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { waitFor } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { allSettled, violations, type Answered } from '../support/invariants.ts';
import { startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres.ts';

const ACK_BUDGET_MS = 2000;

let cluster: PrivatePostgres;
let downstream: Downstream;
let gateway: TestGateway;
/** The test's own connection, to read what the gateway stored. */
let checks: Store;

beforeAll(async () => {
  [cluster, downstream] = await Promise.all([startPrivatePostgres(), startDownstream()]);
  downstream.script('/crm', { honourKey: true });
  gateway = await startTestGateway(
    shopConfig(
      { crm: { url: `${downstream.url}/crm`, idempotency: 'key', timeoutMs: 1000, backoff: { initialMs: 20, maxMs: 200 } } },
      { ackTimeoutMs: ACK_BUDGET_MS },
    ),
    // Polling only once a minute: a task forwarded promptly after the restart was woken by NOTIFY. An attempt
    // whose finish could not be written while the database was down is reclaimed when its short lease ends.
    { database: { url: cluster.url, drop: async () => {} }, forwarder: { pollMs: 60_000, leaseGraceMs: 200 } },
  );
  checks = await openStore({ databaseUrl: cluster.url, poolSize: 1 });
});
afterAll(async () => {
  await gateway?.close();
  await checks?.close();
  await downstream?.close();
  await cluster?.destroy();
});

interface Sent {
  delivery: Delivery;
  status: number;
  retryAfter: string | null;
  at: number;
  json: any;
}

describe('PostgreSQL restarts while deliveries stream in', () => {
  it('answers 503 + Retry-After while it is down, recovers by itself, writes nothing by halves, and LISTEN resubscribes', async () => {
    const sent: Sent[] = [];
    let sending = true;
    const sender = async (name: string) => {
      for (let i = 0; sending; i++) {
        const delivery = shopifyDelivery({ eventId: `${name}-${i}` });
        const answer = await post(gateway.url, 'shop', delivery);
        sent.push({ delivery, status: answer.status, retryAfter: answer.headers.get('retry-after'), at: performance.now(), json: answer.json });
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    const senders = [sender('a'), sender('b')];

    await waitFor(() => sent.filter((s) => s.status === 200).length >= 10);
    await cluster.stop();
    const down = performance.now();
    await waitFor(() => sent.some((s) => s.at > down && s.status === 503));
    expect((await fetch(`${gateway.url}/readyz`)).status).toBe(503);
    await new Promise((resolve) => setTimeout(resolve, 1000 - (performance.now() - down)));
    await cluster.start();
    const up = performance.now();
    await waitFor(() => sent.some((s) => s.at > up && s.status === 200), 15_000);
    // Nobody restarted the gateway: its pool reconnected within a couple of seconds of the database's return.
    expect(sent.find((s) => s.at > up && s.status === 200)!.at - up).toBeLessThan(3000);
    sending = false;
    await Promise.all(senders);

    expect(sent.filter((s) => s.status !== 200 && s.status !== 503)).toEqual([]);
    for (const s of sent.filter((s) => s.status === 503)) expect(s.retryAfter).toMatch(/^\d+$/);
    // The senders retry what was refused; each retry is recorded once, or is the duplicate of a write that committed.
    for (const s of sent.filter((s) => s.status === 503)) {
      const retry = await post(gateway.url, 'shop', s.delivery);
      expect(retry.status, JSON.stringify(retry.json)).toBe(200);
      expect(['accepted', 'duplicate_delivery']).toContain(retry.json.decision);
    }
    const answered: Answered[] = sent
      .filter((s) => s.status === 200)
      .map((s) => ({ receipt: s.json.receipt, decision: s.json.decision, tasks: s.json.tasks.map((t: { id: string }) => t.id) }));
    expect(await violations(checks.db, downstream, answered, [{ path: '/crm', safeguard: 'key' }])).toEqual([]);

    // The workers reconnected: every task is forwarded, with one effect each.
    await waitFor(() => allSettled(checks.db), 15_000).catch(async (error: Error) => {
      throw new Error(`${error.message}: ${JSON.stringify(await rowsOf(checks.db, sql`select state, count(*)::int from tasks group by state`))}`);
    });
    const [succeeded] = await rowsOf<{ n: number }>(checks.db, sql`select count(*)::int as n from tasks where state = 'succeeded'`);
    expect(downstream.effects('/crm')).toHaveLength(succeeded!.n);

    // Quiet now; the next task can only be found this fast through NOTIFY on a resubscribed LISTEN.
    const before = downstream.requests('/crm').length;
    const started = performance.now();
    expect((await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'after-restart' }))).json.decision).toBe('accepted');
    await waitFor(() => downstream.requests('/crm').length > before, 5000);
    expect(performance.now() - started).toBeLessThan(2000);
  }, 60_000);
});
