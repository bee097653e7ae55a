/**
 * On an idle gateway, the time from the ingest ack (the sender has its 200) to the first byte of the first
 * downstream request, measured in one process so both ends read one monotonic clock.
 *
 *   npx tsx scripts/first-forward-latency.ts                  # embedded PGlite
 *   DATABASE_URL=postgres://…/scratch npx tsx scripts/first-forward-latency.ts   # a scratch database: it is migrated
 *
 * Negative figures mean the downstream was reached before the sender had read its answer: the NOTIFY
 * wakes the worker at commit, while the 200 is still on its way.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseConfig } from '../src/config/load.ts';
import { startGateway } from '../src/gateway.ts';
import { createLogger } from '../src/log.ts';

const SAMPLES = Number(process.env.SAMPLES ?? 50);
const IDLE_MS = 200;
const SECRET = 'latency-secret';

const arrivals = new Map<string, number>();
const downstream = createServer((request, response) => {
  arrivals.set(String(request.headers['oncehook-event-id']), performance.now());
  request.resume().on('end', () => response.writeHead(201).end());
});
await new Promise<void>((resolve) => downstream.listen(0, '127.0.0.1', resolve));
const downstreamUrl = `http://127.0.0.1:${(downstream.address() as AddressInfo).port}`;

const config = {
  sources: { shop: { adapter: 'shopify', secrets: [SECRET], actions: { crm: { url: `${downstreamUrl}/crm`, idempotency: 'key' } } } },
};
const gateway = await startGateway({
  config: parseConfig(JSON.stringify(config), 'latency').config,
  logger: createLogger('silent'),
  port: 0,
  host: '127.0.0.1',
  databaseUrl: process.env.DATABASE_URL,
});

const latencies: number[] = [];
for (let i = 0; i < SAMPLES + 5; i++) {
  await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
  const eventId = randomUUID();
  const body = JSON.stringify({ id: i });
  const response = await fetch(`${gateway.url}/in/shop`, {
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/json',
      'x-shopify-hmac-sha256': createHmac('sha256', SECRET).update(body).digest('base64'),
      'x-shopify-webhook-id': randomUUID(),
      'x-shopify-event-id': eventId,
      'x-shopify-topic': 'orders/create',
    },
  });
  const acked = performance.now();
  await response.text();
  while (!arrivals.has(eventId)) await new Promise((resolve) => setTimeout(resolve, 1));
  // The first few warm up the JIT, the pools and the connections.
  if (i >= 5) latencies.push(arrivals.get(eventId)! - acked);
}

await gateway.close();
downstream.close();

latencies.sort((a, b) => a - b);
const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!.toFixed(1);
console.log(
  `first forward after the ack, ${latencies.length} samples on ${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'}: ` +
    `median ${at(0.5)} ms, p95 ${at(0.95)} ms, max ${latencies.at(-1)!.toFixed(1)} ms (target: within 50 ms)`,
);
