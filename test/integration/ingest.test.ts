import net from 'node:net';
import { sql, type SQL } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GITHUB_SECRET, githubDelivery, post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { STRIPE_SECRET, stripeRequest, unixSeconds } from '../unit/adapters/fixtures.ts';

let gateway: TestGateway;

beforeAll(async () => {
  const shop = shopConfig({
    crm: { url: 'http://127.0.0.1:9/crm', idempotency: 'key' },
    mail: { url: 'http://127.0.0.1:9/mail', topics: ['customers/create'] },
    ticket: { url: 'http://127.0.0.1:9/ticket', approval: 'required', after: 'crm' },
  });
  const hub = { adapter: 'github', secrets: [GITHUB_SECRET], actions: { crm: { url: 'http://127.0.0.1:9/crm' } } };
  const stripe = { adapter: 'stripe', secrets: [STRIPE_SECRET], actions: { crm: { url: 'http://127.0.0.1:9/crm' } } };
  gateway = await startTestGateway({ sources: { ...shop.sources, hub, stripe } }, { role: 'web' });
});
afterAll(async () => gateway?.close());

const rows = <T>(query: SQL) => rowsOf<T>(gateway.store.db, query);

async function tasksOfEvent(eventId: string) {
  return rows<{ id: string; action: string; state: string; after_task_id: string | null }>(
    sql`select id, action, state, after_task_id from tasks where event_id = ${eventId} order by action`,
  );
}

describe('POST /in/{source}', () => {
  it('accepts a new delivery and creates one task per admitted action, durably', async () => {
    const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'e-accept', webhookId: 'w-accept' }));
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ decision: 'accepted', deliveryId: 'w-accept', eventId: 'e-accept' });
    expect(answer.json.tasks.map((t: { action: string }) => t.action).sort()).toEqual(['crm', 'ticket']);

    const stored = await tasksOfEvent('e-accept');
    expect(stored.map((t) => [t.action, t.state])).toEqual([
      ['crm', 'pending'],
      ['ticket', 'awaiting_approval'],
    ]);
    const crm = stored.find((t) => t.action === 'crm')!;
    expect(stored.find((t) => t.action === 'ticket')!.after_task_id).toBe(crm.id);
  });

  it("stores the body bytes exactly and the receipt's headers without the signature", async () => {
    const body = '{"id":1,  "note":"spacing and ünïcode kept"}';
    const delivery = shopifyDelivery({ eventId: 'e-bytes', body });
    await post(gateway.url, 'shop', delivery);
    const [task] = await rows<{ body: Uint8Array; content_type: string }>(
      sql`select body, content_type from tasks where event_id = 'e-bytes' and action = 'crm'`,
    );
    expect(Buffer.from(task!.body).toString('utf8')).toBe(body);
    expect(task!.content_type).toBe('application/json');
    const [receipt] = await rows<{ headers: Record<string, string> }>(
      sql`select headers from deliveries where event_id = 'e-bytes'`,
    );
    expect(receipt!.headers['x-shopify-hmac-sha256']).toBe('[redacted]');
    expect(JSON.stringify(receipt!.headers)).not.toContain(delivery.headers['x-shopify-hmac-sha256']);
  });

  // A webhook URL pasted with a trailing slash had every delivery answered 404.
  it('takes a delivery at /in/{source}/ as at /in/{source}', async () => {
    const answer = await post(gateway.url, 'shop/', shopifyDelivery({ eventId: 'e-slash', webhookId: 'w-slash' }));
    expect(answer.status).toBe(200);
    expect(answer.json.decision).toBe('accepted');
    expect((await post(gateway.url, 'shop//', shopifyDelivery({ eventId: 'e-slash2' }))).status).toBe(404);
  });

  it('answers a retried delivery as duplicate_delivery, naming the first receipt', async () => {
    const delivery = shopifyDelivery({ eventId: 'e-retry', webhookId: 'w-retry' });
    const first = await post(gateway.url, 'shop', delivery);
    const again = await post(gateway.url, 'shop', delivery);
    expect(again.status).toBe(200);
    expect(again.json.decision).toBe('duplicate_delivery');
    expect(again.json.firstSeen).toMatchObject({ receipt: first.json.receipt, deliveryId: 'w-retry', decision: 'accepted' });
    expect(again.json.tasks.map((t: { id: string }) => t.id).sort()).toEqual(
      first.json.tasks.map((t: { id: string }) => t.id).sort(),
    );
    expect(await tasksOfEvent('e-retry')).toHaveLength(2);
  });

  it('two subscriptions deliver one event under two webhook IDs: one task per action', async () => {
    const a = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'e-two-subs', webhookId: 'sub-a' }));
    const b = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'e-two-subs', webhookId: 'sub-b' }));
    expect(a.json.decision).toBe('accepted');
    expect(b.json.decision).toBe('duplicate_event');
    expect(b.json.firstSeen).toMatchObject({ deliveryId: 'sub-a', eventId: 'e-two-subs' });
    expect(await tasksOfEvent('e-two-subs')).toHaveLength(2);
  });

  it('the same content under a new event ID is a new task: content is never the identity', async () => {
    const body = JSON.stringify({ id: 77, same: 'bytes' });
    const a = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'e-content-1', body }));
    const b = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'e-content-2', body }));
    expect([a.json.decision, b.json.decision]).toEqual(['accepted', 'accepted']);
    expect(a.json.tasks[0].id).not.toBe(b.json.tasks[0].id);
  });

  it("an action's topics decide whether it gets a task", async () => {
    const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'e-topic', topic: 'customers/create' }));
    expect(answer.json.tasks.map((t: { action: string }) => t.action).sort()).toEqual(['crm', 'mail', 'ticket']);
  });

  it("records and deduplicates GitHub's ping, sent when a hook is created, and makes no task of it", async () => {
    const ping = await githubDelivery({ event: 'ping', guid: 'g-ping', body: JSON.stringify({ zen: 'Design for failure.', hook_id: 292430182 }) });
    const answer = await post(gateway.url, 'hub', ping);
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ decision: 'accepted', eventId: 'g-ping', tasks: [] });
    expect((await post(gateway.url, 'hub', ping)).json.decision).toBe('duplicate_delivery');
    expect(await tasksOfEvent('g-ping')).toEqual([]);
    const receipts = await rows<{ topic: string; decision: string }>(
      sql`select topic, decision from deliveries where event_id = 'g-ping' order by received_at, decision`,
    );
    expect(receipts).toEqual([
      { topic: 'ping', decision: 'accepted' },
      { topic: 'ping', decision: 'duplicate_delivery' },
    ]);

    const issue = await githubDelivery({ event: 'issues', guid: 'g-issue', body: JSON.stringify({ action: 'opened' }) });
    expect((await post(gateway.url, 'hub', issue)).json.tasks.map((t: { action: string }) => t.action)).toEqual(['crm']);
  });

  it('50 identical deliveries at once: all 200, exactly one accepted, one task per action', async () => {
    const delivery = shopifyDelivery({ eventId: 'e-storm', webhookId: 'w-storm' });
    const answers = await Promise.all(Array.from({ length: 50 }, () => post(gateway.url, 'shop', delivery)));
    expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200));
    const decisions = answers.map((a) => a.json.decision);
    expect(decisions.filter((d) => d === 'accepted')).toHaveLength(1);
    expect(decisions.filter((d) => d === 'duplicate_delivery')).toHaveLength(49);
    expect(await tasksOfEvent('e-storm')).toHaveLength(2);
    const [count] = await rows<{ n: number }>(sql`select count(*)::int as n from deliveries where event_id = 'e-storm'`);
    expect(count!.n).toBe(50);
  });

  it('50 subscriptions delivering one event at once: exactly one accepted, the rest duplicate_event', async () => {
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => post(gateway.url, 'shop', shopifyDelivery({ eventId: 'e-fan', webhookId: `fan-${i}` }))),
    );
    const decisions = answers.map((a) => a.json.decision);
    expect(decisions.filter((d) => d === 'accepted')).toHaveLength(1);
    expect(decisions.filter((d) => d === 'duplicate_event')).toHaveLength(49);
    expect(await tasksOfEvent('e-fan')).toHaveLength(2);
  });
});

describe('rejections create nothing', () => {
  async function counts() {
    const [c] = await rows<{ d: number; t: number }>(
      sql`select (select count(*)::int from deliveries) as d, (select count(*)::int from tasks) as t`,
    );
    return c!;
  }

  it('401 for a wrong signature, with a message for the sender and nothing stored', async () => {
    const before = await counts();
    const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'e-forged', secret: 'not-the-secret' }));
    expect(answer.status).toBe(401);
    expect(answer.json.error.code).toBe('invalid_signature');
    expect(await counts()).toEqual(before);
  });

  it('400 for a verified delivery that lacks its event ID', async () => {
    const delivery = shopifyDelivery({ eventId: 'x' });
    delete delivery.headers['x-shopify-event-id'];
    const answer = await post(gateway.url, 'shop', delivery);
    expect(answer.status).toBe(400);
    expect(answer.json.error.message).toMatch(/event/i);
  });

  // The answer said the event had no ID, and its developer went looking for a field that was there.
  it('400 for a verified delivery whose event ID is not a string, saying what it is instead', async () => {
    const before = await counts();
    const signed = stripeRequest({ payload: JSON.stringify({ id: 123, type: 'charge.succeeded' }), timestamp: unixSeconds(new Date()) });
    const answer = await post(gateway.url, 'stripe', { headers: Object.fromEntries(signed.headers), body: Buffer.from(signed.body).toString() });
    expect(answer.status).toBe(400);
    expect(answer.json.error).toEqual({ code: 'invalid_identity', message: 'the event id (body "id") is a number, not a string' });
    expect(await counts()).toEqual(before);
  });

  it('a verified delivery with a time the database cannot hold is recorded without it, not refused or failed', async () => {
    const delivery = shopifyDelivery({ eventId: 'e-year-zero' });
    delivery.headers['x-shopify-triggered-at'] = '0000-01-01T00:00:00Z';
    const answer = await post(gateway.url, 'shop', delivery);
    expect(answer.status, JSON.stringify(answer.json)).toBe(200);
    expect(answer.json.decision).toBe('accepted');
    const [row] = await rows<{ occurred_at: Date | null }>(sql`select occurred_at from deliveries where event_id = 'e-year-zero'`);
    expect(row!.occurred_at).toBeNull();
  });

  // `/in/` and `/in` were answered 404 by no route at all: neither counted nor logged, so a sender posting there was invisible.
  it('404 for an unknown source or none, each counted as a rejection of the unknown source', async () => {
    const unknown = async () => {
      const scrape = await (await fetch(`${gateway.url}/metrics`)).text();
      return Number(/^oncehook_rejections_total\{source="\(unknown\)",reason="unknown_source"\} (\d+)$/m.exec(scrape)?.[1] ?? 0);
    };
    const before = await unknown();
    for (const path of ['/in/nowhere', '/in/', '/in', '/in/shop/orders']) {
      const answer = await fetch(`${gateway.url}${path}`, { method: 'POST', body: '{}' });
      expect(answer.status, path).toBe(404);
      expect((await answer.json()).error.code, path).toBe('unknown_source');
    }
    expect(await unknown()).toBe(before + 4);
  });

  it('413 for a body over the limit, also when chunked without a Content-Length', async () => {
    const big = JSON.stringify({ pad: 'x'.repeat(1024 * 1024 + 10) });
    const declared = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'e-big', body: big }));
    expect(declared.status).toBe(413);

    const delivery = shopifyDelivery({ eventId: 'e-big-chunked', body: big });
    const bytes = new TextEncoder().encode(delivery.body);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 64 * 1024) controller.enqueue(bytes.subarray(i, i + 64 * 1024));
        controller.close();
      },
    });
    const response = await fetch(`${gateway.url}/in/shop`, {
      method: 'POST',
      headers: delivery.headers,
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(413);
    expect((await response.json()).error.code).toBe('body_too_large');
    expect(await tasksOfEvent('e-big-chunked')).toHaveLength(0);
  });

  it('Expect: 100-continue — an oversized body is refused with 413 before it is sent, an admitted one is asked for', async () => {
    const big = shopifyDelivery({ eventId: 'e-expect-big', body: JSON.stringify({ pad: 'x'.repeat(1024 * 1024 + 10) }) });
    const refused = await expectContinue(big);
    expect(refused.first).toMatch(/^HTTP\/1\.1 413 /);
    expect(refused.first).toContain('body_too_large');

    const small = shopifyDelivery({ eventId: 'e-expect-small' });
    const admitted = await expectContinue(small);
    expect(admitted.first).toMatch(/^HTTP\/1\.1 100 Continue/);
    expect(admitted.final).toMatch(/^HTTP\/1\.1 200 /);
    expect(admitted.final).toContain('"decision":"accepted"');

    // The token among others, as Node reads it, is answered too.
    const listed = await expectContinue(shopifyDelivery({ eventId: 'e-expect-listed' }), '100-continue, x-other');
    expect(listed.first).toMatch(/^HTTP\/1\.1 100 Continue/);
    expect(listed.final).toMatch(/^HTTP\/1\.1 200 /);
  });
});

/**
 * Sends a delivery's head with `Expect: 100-continue` and waits for the first answer before sending the body
 * (as curl and .NET clients do for large bodies); the body goes only after a 100.
 */
async function expectContinue(delivery: ReturnType<typeof shopifyDelivery>, expect = '100-continue'): Promise<{ first: string; final: string }> {
  const socket = net.connect(Number(new URL(gateway.url).port), '127.0.0.1');
  const body = Buffer.from(delivery.body);
  const head = Object.entries(delivery.headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  socket.write(`POST /in/shop HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\nExpect: ${expect}\r\n${head}\r\n`);
  let text = '';
  const arrived = (done: (t: string) => boolean) =>
    new Promise<string>((resolve, reject) => {
      const check = () => done(text) && (socket.off('data', onData), resolve(text));
      const onData = (chunk: Buffer) => {
        text += chunk.toString();
        check();
      };
      socket.on('data', onData);
      socket.once('error', reject);
      check();
    });
  const first = await arrived((t) => /^HTTP\/1\.1 100 [^\r]*\r\n\r\n/.test(t) || /\}$/.test(t));
  if (!first.startsWith('HTTP/1.1 100')) {
    socket.destroy();
    return { first, final: first };
  }
  text = '';
  socket.write(body);
  const final = await arrived((t) => /\}$/.test(t));
  socket.destroy();
  return { first, final };
}
