import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, SHOP_SECRET, shopifyDelivery } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { partialRequest } from '../support/raw-request.ts';

const READ_TIMEOUT_MS = 400;

let gateway: TestGateway;

beforeAll(async () => {
  const action = { crm: { url: 'http://127.0.0.1:9/crm', idempotency: 'key' } };
  gateway = await startTestGateway({
    limits: { maxInFlight: 2 },
    sources: {
      shop: { adapter: 'shopify', secrets: [SHOP_SECRET], actions: action, readTimeoutMs: READ_TIMEOUT_MS, maxBodiesReading: 2 },
      limited: { adapter: 'shopify', secrets: [SHOP_SECRET], actions: action, rateLimit: { perSecond: 0.5, burst: 2 } },
      other: { adapter: 'shopify', secrets: [SHOP_SECRET], actions: action },
    },
  });
});
afterAll(async () => gateway?.close());

/** Sends the headers and part of the body, then nothing more: a slowloris. Resolves with the raw answer. */
function slowRequest(source: string): { answer: Promise<string>; socket: net.Socket } {
  const { port } = new URL(gateway.url);
  const socket = net.connect(Number(port), '127.0.0.1');
  const delivery = shopifyDelivery({ eventId: `slow-${Math.random()}` });
  socket.write(
    `POST /in/${source} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${delivery.body.length}\r\n` +
      Object.entries(delivery.headers)
        .filter(([name]) => name !== 'content-type')
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('') +
      `\r\n${delivery.body.slice(0, 5)}`,
  );
  const answer = new Promise<string>((resolve) => {
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk.toString();
      if (text.includes('\r\n\r\n{')) resolve(text);
    });
    socket.on('close', () => resolve(text));
    socket.on('error', () => resolve(text));
  });
  return { answer, socket };
}

describe('admission', () => {
  it('cuts a body that trickles in off at readTimeoutMs with 408, and closes the connection', async () => {
    const started = performance.now();
    const { answer, socket } = slowRequest('shop');
    const closed = new Promise((resolve) => socket.on('close', resolve));
    const text = await answer;
    await closed;
    expect(text).toMatch(/^HTTP\/1\.1 408/);
    expect(text.toLowerCase()).toContain('connection: close');
    expect(text).toContain('body_timeout');
    expect(performance.now() - started).toBeGreaterThanOrEqual(READ_TIMEOUT_MS - 50);
  });

  it('cuts a body arriving slower than the minimum rate off with 408 once the grace is over, and not a sender that keeps up', async () => {
    const started = performance.now();
    const trickled = slowRequest('other');
    const drip = setInterval(() => trickled.socket.write(' '), 200);
    // 1,200 bytes, then a pause past the 2 s grace: still ahead of 1 KiB/s counted from the end of the grace.
    const paused = partialRequest(gateway.url, 'other', shopifyDelivery({ eventId: 'e-paused', body: JSON.stringify({ id: 1, pad: 'x'.repeat(1500) }) }), 1200);
    setTimeout(() => paused.finish(), 2500);
    const text = await trickled.answer;
    const cutAfter = performance.now() - started;
    clearInterval(drip);
    expect(text).toMatch(/^HTTP\/1\.1 408/);
    expect(text).toContain('body_too_slow');
    expect(text.toLowerCase()).toContain('connection: close');
    // The grace is 2 s, readTimeoutMs 15 s.
    expect(cutAfter).toBeGreaterThanOrEqual(1950);
    expect(cutAfter).toBeLessThan(6000);
    expect(await paused.answer).toMatch(/^HTTP\/1\.1 200/);
    trickled.socket.destroy();
    paused.socket.destroy();
  });

  it("answers 503 source_busy past a source's cap on bodies being read, for that source alone, and admits again once they end", async () => {
    const slow = [slowRequest('shop'), slowRequest('shop')];
    await new Promise((resolve) => setTimeout(resolve, 100));
    const turnedAway = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'e-capped' }));
    expect(turnedAway.status).toBe(503);
    expect(turnedAway.json.error.code).toBe('source_busy');
    expect(turnedAway.headers.get('retry-after')).toBe('1');
    expect((await post(gateway.url, 'other', shopifyDelivery({ eventId: 'e-beside-capped' }))).status).toBe(200);

    await Promise.all(slow.map((s) => s.answer));
    for (const s of slow) s.socket.destroy();
    const admitted = await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'e-capped' }));
    expect(admitted.status).toBe(200);
    expect(admitted.json.decision).toBe('accepted');
  });

  it('holds no global in-flight slot for a body being read: more slow bodies than maxInFlight leave the others admitted', async () => {
    const slow = [slowRequest('other'), slowRequest('other'), slowRequest('other')];
    await new Promise((resolve) => setTimeout(resolve, 100));
    const answers = await Promise.all(['a', 'b'].map((id) => post(gateway.url, 'shop', shopifyDelivery({ eventId: `e-beside-slow-${id}` }))));
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    for (const s of slow) s.socket.destroy();
  });

  it('answers a source that is not configured 404 at once, closing the connection rather than waiting for its body', async () => {
    const unknown = partialRequest(gateway.url, 'nope', shopifyDelivery({ eventId: 'e-unknown' }));
    const text = await unknown.answer;
    expect(text).toMatch(/^HTTP\/1\.1 404/);
    expect(text.toLowerCase()).toContain('connection: close');
    unknown.socket.destroy();
  });

  it("answers 429 with Retry-After past a source's rate limit, without touching other sources", async () => {
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await post(gateway.url, 'limited', shopifyDelivery({ eventId: `rl-${i}` })));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 429]);
    expect(answers[2]!.json.error.code).toBe('rate_limited');
    expect(Number(answers[2]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'rl-other' }))).status).toBe(200);
  });
});
