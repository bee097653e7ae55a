/**
 * The gateway's memory as the kernel counts it, and how soon it is ready: `oncehook serve` on a new embedded data
 * directory, then again on the same directory. Each start: the time from spawning the process to its first /readyz
 * 200 (the database open and migrated), the CPU time it took, its peak (VmHWM) then; then five deliveries forwarded to a local
 * downstream, one action shaped by a transform, and its resident memory (VmRSS) and peak after idling.
 *
 *   npm run build && npx tsx scripts/embedded-memory.ts      # the compiled build, as deployed
 *   npx tsx scripts/embedded-memory.ts --sources              # the sources through tsx, as `npm start` runs them
 *   npx tsx scripts/embedded-memory.ts --installed /tmp/oh/bin/oncehook   # an installed package, from another directory
 *   DATABASE_URL=postgres://…/scratch npx tsx scripts/embedded-memory.ts   # on PostgreSQL (a scratch database)
 *   IDLE_S=30 RUNS=3 npx tsx scripts/embedded-memory.ts
 */
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuSecondsOf, memoryOf } from '../bench/proc.ts';
import { serveOncehook } from '../bench/serve.ts';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const IDLE_S = Number(process.env.IDLE_S ?? 10);
const RUNS = Number(process.env.RUNS ?? 1);
const DELIVERIES = 5;
const SECRET = 'memory-secret';
const sources = process.argv.includes('--sources');
const at = process.argv.indexOf('--installed');
const installed = at === -1 ? undefined : process.argv[at + 1];
const bin = installed ?? (sources ? join(REPO, 'bin', 'oncehook.js') : join(REPO, 'dist', 'src', 'cli', 'main.js'));
const MiB = 1024 * 1024;
const mib = (bytes: number | null) => (bytes === null ? '?' : (bytes / MiB).toFixed(0));

let forwarded = 0;
const downstream = createServer((request, response) => request.resume().on('end', () => (forwarded++, response.writeHead(201).end())));
await new Promise<void>((resolve) => downstream.listen(0, '127.0.0.1', resolve));
const origin = `http://127.0.0.1:${(downstream.address() as AddressInfo).port}`;
const actions = { crm: { url: `${origin}/crm`, idempotency: 'key' }, contact: { url: `${origin}/contact`, idempotency: 'key', transform: '{"id": $taskId, "email": email}' } };

async function deliver(url: string, eventId: string): Promise<void> {
  const body = JSON.stringify({ id: 1, email: 'memory@example.com' });
  const headers = {
    'content-type': 'application/json',
    'x-shopify-hmac-sha256': createHmac('sha256', SECRET).update(body).digest('base64'),
    'x-shopify-webhook-id': randomUUID(),
    'x-shopify-event-id': eventId,
    'x-shopify-topic': 'orders/create',
  };
  const response = await fetch(`${url}/in/shop`, { method: 'POST', headers, body });
  if (response.status !== 200) throw new Error(`delivery answered ${response.status}: ${await response.text()}`);
}

async function serve(config: string, dataDir: string) {
  const started = performance.now();
  const gateway = await serveOncehook(bin, config, {
    // An installed package runs from a directory of the user's, which has nothing of oncehook's.
    cwd: installed ? tmpdir() : REPO,
    env: { ...process.env, ONCEHOOK_DATA_DIR: dataDir, LOG_LEVEL: 'info', ...(sources ? { ONCEHOOK_FROM_SOURCES: '1' } : {}) },
  });
  const { url, pid } = gateway;
  // Listening comes a moment before the first /readyz 200, which is what a load balancer or a user waits for.
  while ((await fetch(`${url}/readyz`)).status !== 200) await new Promise((resolve) => setTimeout(resolve, 5));
  const readyMs = performance.now() - started;
  const readyCpuS = cpuSecondsOf(pid);
  const ready = memoryOf(pid);
  const before = forwarded;
  for (let i = 0; i < DELIVERIES; i++) await deliver(url, `memory-${pid}-${i}`);
  while (forwarded < before + DELIVERIES * 2) await new Promise((resolve) => setTimeout(resolve, 50));
  await new Promise((resolve) => setTimeout(resolve, IDLE_S * 1000));
  const idle = memoryOf(pid);
  await gateway.stop();
  return { readyMs, readyCpuS, peakReady: ready.peak, rssIdle: idle.rss, peak: idle.peak };
}

console.log(`${installed ? `the package installed at ${installed}` : sources ? 'the sources through tsx' : 'the build (dist/)'} on ${process.env.DATABASE_URL ? 'PostgreSQL' : 'embedded PGlite'}; idle ${IDLE_S} s`);
// On a busy machine the wall time to ready grows with what else runs; the CPU time it took much less so.
console.log('start    ready ms  its CPU s  peak when ready  RSS idle  peak (MiB)');
try {
  for (let run = 0; run < RUNS; run++) {
    const dir = mkdtempSync(join(tmpdir(), 'oncehook-memory-'));
    try {
      const config = join(dir, 'config.json');
      writeFileSync(config, JSON.stringify({ sources: { shop: { adapter: 'shopify', secrets: [SECRET], actions } } }));
      for (const name of ['new', 'restart']) {
        const { readyMs, readyCpuS, peakReady, rssIdle, peak } = await serve(config, join(dir, 'data'));
        const cpu = readyCpuS === null ? '?' : readyCpuS.toFixed(2);
        console.log(
          `${name.padEnd(8)} ${readyMs.toFixed(0).padStart(8)}  ${cpu.padStart(9)}  ${mib(peakReady).padStart(15)}  ${mib(rssIdle).padStart(8)}  ${mib(peak).padStart(4)}`,
        );
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
} finally {
  downstream.close();
}
