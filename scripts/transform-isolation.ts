/**
 * Can one source's transforms hold up another source's deliveries, or the gateway's memory? Three probes from
 * outside, each against a new `oncehook serve` on embedded PGlite (npm start's deployment), the build when it is
 * current. Source `hub` (GitHub signing, so a replay is not refused for its age) carries the probe's transform;
 * source `other` a trivial one, and receives 4 new deliveries a second throughout.
 *
 *   npx tsx scripts/transform-isolation.ts                     # all three, 20 s each
 *   DURATION_S=60 npx tsx scripts/transform-isolation.ts loops # one probe, longer
 *
 * - `replays`: one signed ~550 KB delivery whose transform walks the whole body, accepted once, then replayed 4/s.
 * - `loops`: 12 new deliveries a second, each transform an endless loop.
 * - `hungry`: one transform that would take hundreds of MiB.
 * The machine's load average is printed with each probe: on two shared cores it moves every figure.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sign } from '@octokit/webhooks-methods';
import { summarize } from '../bench/histogram.ts';
import { memoryOf } from '../bench/proc.ts';
import { serveOncehook } from '../bench/serve.ts';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const SECRET = 'isolation-secret';
const DURATION_S = Number(process.env.DURATION_S ?? 20);
const OTHER_PER_S = 4;
const WALK = '{"items": $count(items), "total": $sum(items.price), "skus": items.sku}';
const LOOP = '($loop := function($n) { $loop($n + 1) }; $loop(0))';
const HUNGRY = '$count([1..10000000].{"n": $, "s": $string($)})';
const PROBES: Record<string, string> = { replays: WALK, loops: LOOP, hungry: HUNGRY };

interface Answer {
  status: number;
  ms: number;
  code: string;
}

const downstream = createServer((request, response) => request.resume().on('end', () => response.writeHead(200).end()));
await new Promise<void>((resolve) => downstream.listen(0, '127.0.0.1', resolve));
const origin = `http://127.0.0.1:${(downstream.address() as AddressInfo).port}`;

async function deliver(url: string, source: string, body: string, guid = randomUUID()): Promise<Answer> {
  const headers = { 'content-type': 'application/json', 'x-hub-signature-256': await sign(SECRET, body), 'x-github-delivery': guid, 'x-github-event': 'issues' };
  const started = performance.now();
  try {
    const response = await fetch(`${url}/in/${source}`, { method: 'POST', headers, body });
    const text = await response.text();
    const json = text ? (JSON.parse(text) as { decision?: string; error?: { code: string } }) : {};
    return { status: response.status, ms: performance.now() - started, code: json.decision ?? json.error?.code ?? '' };
  } catch (error) {
    return { status: 0, ms: performance.now() - started, code: (error as Error).message };
  }
}

/** The largest peak of the gateway's children (its transform processes) now alive. */
function childrenPeak(pid: number): number {
  let peak = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    const children = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
    for (const child of children ? children.split(' ').map(Number) : []) peak = Math.max(peak, memoryOf(child).peak ?? 0);
  }
  return peak;
}

/** Samples `childrenPeak` until stopped: a child killed at its limit takes its own peak with it. */
function watchChildren(pid: number): () => number {
  let peak = 0;
  const timer = setInterval(() => (peak = Math.max(peak, childrenPeak(pid))), 20);
  return () => (clearInterval(timer), Math.max(peak, childrenPeak(pid)));
}

async function serve(transform: string, dir: string) {
  const config = join(dir, 'config.json');
  const action = (shape: string) => ({ crm: { url: `${origin}/crm`, idempotency: 'key', transform: shape } });
  writeFileSync(
    config,
    JSON.stringify({ sources: { hub: { adapter: 'github', secrets: [SECRET], actions: action(transform) }, other: { adapter: 'github', secrets: [SECRET], actions: action('{"n": n}') } } }),
  );
  return serveOncehook(join(REPO, 'bin', 'oncehook.js'), config, { cwd: REPO, env: { ...process.env, ONCEHOOK_DATA_DIR: join(dir, 'data'), LOG_LEVEL: 'info' } });
}

/** Sends `perSecond` of `send()` for the probe's duration, each at its time whatever the answers before it. */
async function paced(perSecond: number, send: () => Promise<Answer>): Promise<Answer[]> {
  const sent: Promise<Answer>[] = [];
  const started = performance.now();
  for (let n = 0; n < DURATION_S * perSecond; n++) {
    const wait = started + (n * 1000) / perSecond - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    sent.push(send());
  }
  return Promise.all(sent);
}

function describe(name: string, answers: Answer[]): string {
  const counts = new Map<string, number>();
  for (const { status, code } of answers) counts.set(`${status} ${code}`, (counts.get(`${status} ${code}`) ?? 0) + 1);
  const { p50, p99, max } = summarize(Float64Array.from(answers.map(({ ms }) => ms)).sort());
  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  return `${name.padEnd(8)} ${[...counts].map(([key, n]) => `${n}× ${key}`).join(', ')}; p50 ${s(p50)}, p99 ${s(p99)}, max ${s(max)}`;
}

async function probe(name: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'oncehook-isolation-'));
  const gateway = await serve(PROBES[name]!, dir);
  try {
    const { url, pid } = gateway;
    const rssBefore = memoryOf(pid).rss ?? 0;
    const load = loadavg()[0]!.toFixed(1);
    const transformPeak = watchChildren(pid);
    let hub: Promise<Answer[]>;
    if (name === 'replays') {
      const items = Array.from({ length: 5000 }, (_, i) => ({ sku: `SKU-${i}`, price: (i % 97) + 0.5, title: `item ${i} of the probe's large delivery` }));
      const body = JSON.stringify({ items });
      const guid = randomUUID();
      const first = await deliver(url, 'hub', body, guid);
      if (first.status !== 200) throw new Error(`the large delivery was answered ${first.status} ${first.code}`);
      hub = paced(4, () => deliver(url, 'hub', body, guid));
    } else if (name === 'loops') {
      hub = paced(12, () => deliver(url, 'hub', JSON.stringify({ n: 1 })));
    } else {
      hub = deliver(url, 'hub', JSON.stringify({ n: 1 })).then((answer) => [answer]);
    }
    const other = paced(OTHER_PER_S, () => deliver(url, 'other', JSON.stringify({ n: 2 })));
    const [hubAnswers, otherAnswers] = await Promise.all([hub, other]);
    const { rss, peak } = memoryOf(pid);
    const mib = (bytes: number | null) => `${((bytes ?? 0) / 2 ** 20).toFixed(0)} MiB`;
    console.log(`\n${name}: load average ${load} at the start, ${loadavg()[0]!.toFixed(1)} at the end`);
    console.log(describe('hub', hubAnswers));
    console.log(describe('other', otherAnswers));
    console.log(`gateway  RSS ${mib(rssBefore)} → ${mib(rss)}, peak ${mib(peak)}; transform processes' peak ${mib(transformPeak())}`);
  } finally {
    await gateway.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

try {
  const chosen = process.argv.slice(2);
  for (const name of chosen.length > 0 ? chosen : Object.keys(PROBES)) {
    if (!PROBES[name]) throw new Error(`no probe named ${name}: ${Object.keys(PROBES).join(', ')}`);
    await probe(name);
  }
} finally {
  downstream.close();
}
