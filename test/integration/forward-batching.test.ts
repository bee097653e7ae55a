import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { ledger, rows, taskIn, waitFor } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { partialRequest } from '../support/raw-request.ts';

const BURST = 120;

let gateway: TestGateway;
let downstream: Downstream;

beforeAll(async () => {
  downstream = await startDownstream();
  // Every delivery of the burst is being read at once, more than a source's default cap, and for as long as a busy
  // machine takes to connect them all: maybe past the 2 s a body may go without bytes.
  const config = shopConfig({ crm: { url: `${downstream.url}/crm`, idempotency: 'key' } }, { maxBodiesReading: BURST });
  gateway = await startTestGateway({ ...config, limits: { bodyRateGraceMs: 10_000 } }, {
    forwarder: { concurrency: 16 },
  });
});
afterAll(async () => {
  await gateway?.close();
  await downstream?.close();
});

describe('a burst through one gateway', () => {
  it('is recorded, claimed and finished in shared transactions, and every task is sent once', async () => {
    // Every delivery's head is read first and its body held back; then all bodies arrive at once, as a
    // sender's retries do after an outage, whatever engine runs in this process beside the senders.
    const held = Array.from({ length: BURST }, (_, i) => partialRequest(gateway.url, 'shop', shopifyDelivery({ eventId: `burst-${i}` })));
    await Promise.all(held.map(({ socket }) => new Promise((resolve) => socket.once('connect', resolve))));
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (const request of held) request.finish();
    const answers = await Promise.all(held.map(({ answer }) => answer));
    expect(answers.filter((text) => text.startsWith('HTTP/1.1 200') && text.includes('"decision":"accepted"'))).toHaveLength(BURST);
    held.forEach(({ socket }) => socket.destroy());
    const db = gateway.store.db;
    await waitFor(async () => {
      const [done] = await rows<{ n: number }>(db, sql`select count(*)::int as n from tasks where state = 'succeeded'`);
      return done!.n === BURST;
    }, 20_000);
    // now() is the time its transaction began, so the distinct times count the transactions: receipts,
    // claims and finishes written together share one.
    const [counts] = await rows<{ ingest: number; claims: number; finishes: number; attempts: number }>(
      db,
      sql`select (select count(distinct received_at)::int from deliveries) as ingest,
                 (select count(distinct started_at)::int from attempts) as claims,
                 (select count(distinct finished_at)::int from attempts) as finishes,
                 (select count(*)::int from attempts) as attempts`,
    );
    expect(counts!.attempts).toBe(BURST);
    expect(downstream.effects('/crm')).toHaveLength(BURST);
    expect(counts!.ingest).toBeLessThanOrEqual(BURST / 2);
    expect(counts!.claims).toBeLessThanOrEqual(BURST / 2);
    expect(counts!.finishes).toBeLessThanOrEqual(BURST / 2);
  });
});

describe('once the queue is drained', () => {
  // Polls far apart, so what is picked up promptly below was woken for, not found by the poll.
  const POLL_MS = 5000;
  const FAST = { timeoutMs: 400, backoff: { initialMs: 20, maxMs: 40 } };
  let quiet: TestGateway;
  let target: Downstream;

  beforeAll(async () => {
    target = await startDownstream();
    quiet = await startTestGateway(
      shopConfig({
        retried: { url: `${target.url}/retried`, topics: ['retried'], idempotency: 'key', ...FAST },
        crm: { url: `${target.url}/crm`, topics: ['steps'], ...FAST },
        mail: { url: `${target.url}/mail`, topics: ['steps'], after: 'crm', ...FAST },
      }),
      { forwarder: { pollMs: POLL_MS } },
    );
  });
  afterAll(async () => {
    await quiet?.close();
    await target?.close();
  });

  /** Milliseconds, in database time, from one attempt's finish to the next attempt's start. */
  const gapMs = (finishedAt: Date | null, startedAt: Date) => startedAt.getTime() - finishedAt!.getTime();

  it('sends a retry when its backoff ends, not at the next poll', async () => {
    target.script('/retried', { steps: [{ status: 503 }], honourKey: true });
    const answer = await post(quiet.url, 'shop', shopifyDelivery({ eventId: 'drained-retry', topic: 'retried' }));
    const id = answer.json.tasks[0].id;
    await taskIn(quiet.store.db, id, 'succeeded');
    const [first, second] = await ledger(quiet.store.db, id);
    expect(gapMs(first!.finishedAt, second!.startedAt)).toBeLessThan(POLL_MS / 5);
  });

  it('sends a step as soon as the task it waits for succeeded, not at the next poll', async () => {
    const answer = await post(quiet.url, 'shop', shopifyDelivery({ eventId: 'drained-step', topic: 'steps' }));
    const ids = Object.fromEntries(answer.json.tasks.map((t: { id: string; action: string }) => [t.action, t.id]));
    await taskIn(quiet.store.db, ids.mail, 'succeeded');
    const [crm] = await ledger(quiet.store.db, ids.crm);
    const [mail] = await ledger(quiet.store.db, ids.mail);
    expect(gapMs(crm!.finishedAt, mail!.startedAt)).toBeLessThan(POLL_MS / 5);
  });
});
