import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, SHOP_SECRET, shopifyDelivery } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { trickleElsewhere } from '../support/trickle.ts';

const SOCKETS = 300;
const QUIET_MS = 1000;
/** Past the 2 s grace of the minimum rate, so the first trickling bodies are cut and their sockets come back. */
const ATTACKED_MS = 3000;
const SENDERS = 2;
const SHOPIFY_BUDGET_MS = 5000;

let gateway: TestGateway;

beforeAll(async () => {
  const action = { crm: { url: 'http://127.0.0.1:9/crm', idempotency: 'key' } };
  // The limits are the defaults: what a gateway on the internet runs with.
  gateway = await startTestGateway(
    {
      sources: {
        shop: { adapter: 'shopify', secrets: [SHOP_SECRET], actions: action },
        open: { adapter: 'shopify', secrets: ['a-secret-the-attacker-lacks'], actions: action },
      },
    },
    { role: 'web' },
  );
});
afterAll(async () => gateway?.close());

/** Signed deliveries to `shop` from `SENDERS` senders one after another for `ms`: their statuses and p99. */
async function send(ms: number, prefix: string): Promise<{ statuses: number[]; p99: number; max: number }> {
  const statuses: number[] = [];
  const times: number[] = [];
  const until = performance.now() + ms;
  await Promise.all(
    Array.from({ length: SENDERS }, async (_, sender) => {
      for (let i = 0; performance.now() < until; i++) {
        const sent = performance.now();
        const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: `${prefix}-${sender}-${i}` }));
        times.push(performance.now() - sent);
        statuses.push(answer.status);
      }
    }),
  );
  times.sort((a, b) => a - b);
  return { statuses, p99: times[Math.ceil(times.length * 0.99) - 1]!, max: times.at(-1)! };
}

describe('300 connections trickling bodies', () => {
  // Before: each took one of the 256 global slots until readTimeoutMs, and a signed source beside them got
  // 503 overloaded on nearly every delivery.
  it("leave an unrelated, signed source answered 2xx within its sender's budget, and are themselves cut off", async () => {
    // Also prepares the statements every later delivery reuses, which is not what the attack costs.
    const quiet = await send(QUIET_MS, 'quiet');
    const attack = await trickleElsewhere(gateway.url, 'open', { sockets: SOCKETS, declaredBytes: 100_000, everyMs: 2000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const { statuses, p99, max } = await send(ATTACKED_MS, 'attacked');
    const attacked = await attack.stop();

    const ok = statuses.filter((status) => status >= 200 && status < 300).length;
    const seen = `${ok} of ${statuses.length} 2xx, p99 ${Math.round(p99)} ms, max ${Math.round(max)} ms (p99 ${Math.round(quiet.p99)} ms without the attack); the attack's answers ${JSON.stringify([...attacked.answers])}`;
    expect(statuses.length, seen).toBeGreaterThan(10);
    expect(ok / statuses.length, seen).toBeGreaterThanOrEqual(0.99);
    // Within Shopify's budget, every one. On a quiet machine p99 stays well under a second (docs/reliability.md);
    // on a busy one the same senders' p99 without any attack reaches 0.8 s, and the attack's connections cost CPU
    // (about a millisecond each) that a busy machine stretches.
    expect(max, seen).toBeLessThanOrEqual(SHOPIFY_BUDGET_MS);
    // The source it aims at: bodies past its cap turned away at once, the ones read cut by the rate after the grace.
    expect(attacked.answers.get(503), seen).toBeGreaterThan(0);
    expect(attacked.answers.get(408), seen).toBeGreaterThan(0);
  });
});
