import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { openStore } from '../../src/store/connect.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { SHOP_SECRET, shopifyDelivery, type Delivery } from './deliveries.ts';
import { startDownstream } from './downstream.ts';
import { allSettled, EACH_SAFEGUARD, settledViolations, violations, type Answered } from './invariants.ts';
import { startPrivatePostgres } from './private-postgres.ts';
import { spawnGateway, type GatewayProcess } from './process.ts';
import { seededRandom } from './random.ts';
import { startProxy, type FaultyProxy } from './tcp-proxy.ts';

/** What the nemesis does, one at a time: to the network before PostgreSQL or the downstream, to a process, to PostgreSQL. */
export const FAULTS = [
  'db-cut',
  'db-stall',
  'db-latency',
  'db-refuse',
  'downstream-cut',
  'downstream-stall',
  'downstream-latency',
  'downstream-refuse',
  'kill',
  'postgres-restart',
] as const;
export type Fault = (typeof FAULTS)[number];

export interface NemesisOptions {
  faults: number;
  seed?: number;
  /** How long a fault lasts, drawn between the two (a cut and a kill are instants). */
  faultMs?: [number, number];
  /** The quiet between two faults, drawn between the two. */
  gapMs?: [number, number];
  /** Senders posting at once; each waits 20–60 ms between deliveries. */
  senders?: number;
  /** The `oncehook` to run (default: the test run's build, else the launcher). */
  bin?: string;
  log?: (line: string) => void;
}

/** How soon after a fault's end the next delivery was answered 2xx, in ms, per fault. */
export type Recoveries = Record<Fault, number[]>;

export interface NemesisSummary {
  seed: number;
  faults: Record<Fault, number>;
  /** Every post a sender made (retries included), and those answered 2xx. */
  posts: number;
  ok: number;
  /** Deliveries answered `accepted`; tasks in the database; effects the downstream made. */
  accepted: number;
  tasks: number;
  effects: number;
  /** Gateway processes started, and those that exited without being killed. */
  starts: number;
  unexpectedExits: number;
  recoveries: Recoveries;
  /** A 2xx whose receipt or tasks are not in the database. */
  lost: string[];
  /** A task with a second effect, or sent twice without a key or a lookup. */
  doubled: string[];
  /** A task recorded as succeeded with no effect at the downstream. */
  phantom: string[];
  /** An event answered `accepted` more than once. */
  duplicatesAccepted: string[];
  /** Any other invariant broken: half-written rows, a task not settled, a lease on a settled task. */
  other: string[];
  seconds: number;
}

const TIMEOUT_MS = 1000;
const ACTIONS = EACH_SAFEGUARD;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Post {
  /** When the post was sent and answered (performance.now()). */
  sentAt: number;
  at: number;
  status: number;
}

/** One gateway process, started again whenever it dies. */
interface Slot {
  gateway: GatewayProcess | undefined;
  starting: Promise<void> | undefined;
  killing: boolean;
}

/**
 * Two gateways on one private PostgreSQL, a fault proxy before the database and another before the downstream,
 * senders that retry every delivery until it is answered 2xx, and one fault after another: connections cut
 * (reset), stalled (bytes held), slowed, refused; a gateway killed with -9; PostgreSQL restarted. Then every
 * fault is mended, every task settles, and the promises are checked: nothing answered 2xx lost, no second
 * effect, no success without effect, no event accepted twice.
 */
export async function runNemesis(options: NemesisOptions): Promise<NemesisSummary> {
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const rand = seededRandom(seed);
  const between = ([min, max]: [number, number]) => min + rand() * (max - min);
  const pick = <T>(items: readonly T[]) => items[Math.floor(rand() * items.length)]!;
  const log = options.log ?? (() => {});
  const faultMs = options.faultMs ?? [200, 1500];
  const gapMs = options.gapMs ?? [100, 600];
  const began = performance.now();

  const dir = mkdtempSync(join(tmpdir(), 'oncehook-nemesis-'));
  const [cluster, downstream] = await Promise.all([startPrivatePostgres(), startDownstream()]);
  const target = new URL(cluster.url);
  const [dbProxy, downstreamProxy] = await Promise.all([
    startProxy(target.hostname, Number(target.port)),
    startProxy('127.0.0.1', Number(new URL(downstream.url).port)),
  ]);
  const viaProxy = new URL(cluster.url);
  viaProxy.port = String(dbProxy.port);
  const downstreamUrl = `http://127.0.0.1:${downstreamProxy.port}`;
  for (const a of ACTIONS) downstream.script(a.path, { honourKey: a.safeguard === 'key' });

  const actions = Object.fromEntries(
    ACTIONS.map(({ path, safeguard, topic }) => [
      path.slice(1),
      {
        url: `${downstreamUrl}${path}`,
        timeoutMs: TIMEOUT_MS,
        topics: [topic],
        // Attempts enough to outlast any run of faults: a task that ends failed or needs_review here says
        // something went wrong, not that eight attempts fell inside a few seconds of faults.
        maxAttempts: 100,
        backoff: { initialMs: 20, maxMs: 1000 },
        ...(safeguard === 'key' ? { idempotency: 'key' } : {}),
        ...(safeguard === 'lookup' ? { lookup: `${downstreamUrl}${path}/lookup?key={key}` } : {}),
      },
    ]),
  );
  const configFile = join(dir, 'config.json');
  // A stall is noticed in 2 s rather than 30: the run sees many connections abandoned and tried again.
  writeFileSync(configFile, JSON.stringify({ sources: { shop: { adapter: 'shopify', secrets: [SHOP_SECRET], actions } }, limits: { writeStallMs: 2000 } }));

  let starts = 0;
  let unexpectedExits = 0;
  let running = true;
  const slots: Slot[] = [0, 1].map(() => ({ gateway: undefined, starting: undefined, killing: false }));
  const start = (slot: Slot) => {
    slot.starting ??= (async () => {
      while (running) {
        try {
          const gateway = await spawnGateway({
            // A lease lasts an attempt's timeout plus this grace: a worker stalled longer than the grace between
            // its claim and its request (a process starved of CPU on a loaded machine) would have its task
            // reclaimed, looked up and sent again while its own request is still to arrive. 200 ms, as the crash
            // matrix uses with one gateway, gave a lookup action a second effect once in 1,000 faults here.
            args: ['--config', configFile, '--lease-grace-ms', '5000', '--db-wait', '120s'],
            env: { DATABASE_URL: viaProxy.toString() },
            // A start waits out the fault in progress; on a loaded machine it may take a while more.
            startTimeoutMs: 120_000,
            ...(options.bin ? { bin: options.bin } : {}),
          });
          starts++;
          slot.gateway = gateway;
          gateway.child.once('exit', () => {
            if (slot.gateway !== gateway) return;
            slot.gateway = undefined;
            if (slot.killing || !running) return;
            unexpectedExits++;
            log(`a gateway exited by itself: ${gateway.output().trim().split('\n').slice(-3).join(' | ')}`);
            start(slot);
          });
          return;
        } catch (error) {
          unexpectedExits++;
          const lines = (error as Error).message.trim().split('\n');
          log(`a gateway did not start: ${[lines[0], ...lines.slice(-3)].join(' | ')}`);
          await sleep(500);
        }
      }
    })().finally(() => {
      slot.starting = undefined;
    });
    return slot.starting;
  };

  // Senders: every delivery is posted until a gateway answers it 2xx, as a real sender retries.
  const posts: Post[] = [];
  const answered: Answered[] = [];
  const acceptedByEvent = new Map<string, number>();
  const done: Delivery[] = [];
  let sending = true;
  const send = async (delivery: Delivery) => {
    for (;;) {
      const live = slots.flatMap((s) => (s.gateway ? [s.gateway] : []));
      if (live.length === 0) {
        if (!sending && !running) return;
        await sleep(50);
        continue;
      }
      const sentAt = performance.now();
      let status = 0;
      try {
        const response = await fetch(`${pick(live).url}/in/shop`, {
          method: 'POST',
          headers: delivery.headers,
          body: delivery.body,
          signal: AbortSignal.timeout(5000),
        });
        status = response.status;
        const json = (await response.json()) as { receipt?: string; decision?: string; tasks?: { id: string }[] };
        if (response.ok) {
          answered.push({ receipt: json.receipt!, decision: json.decision!, tasks: (json.tasks ?? []).map((t) => t.id) });
          if (json.decision === 'accepted') {
            const event = delivery.headers['x-shopify-event-id']!;
            acceptedByEvent.set(event, (acceptedByEvent.get(event) ?? 0) + 1);
          }
        }
      } catch {
        status = 0; // no answer, or a 2xx whose body was cut off: not a promise either way
      }
      posts.push({ sentAt, at: performance.now(), status });
      if (status >= 200 && status < 300) return;
      await sleep(100 + rand() * 200);
    }
  };
  const sender = async () => {
    while (sending) {
      const roll = rand();
      const earlier = done.length > 0 ? pick(done) : undefined;
      const delivery =
        earlier && roll < 0.1
          ? earlier // a sender's retry of what was answered already
          : earlier && roll < 0.2
            ? shopifyDelivery({ eventId: earlier.headers['x-shopify-event-id']!, topic: earlier.headers['x-shopify-topic']! }) // a second subscription
            : shopifyDelivery({ eventId: randomUUID(), topic: pick(ACTIONS).topic });
      await send(delivery);
      if (delivery !== earlier) done.push(delivery);
      await sleep(20 + rand() * 40);
    }
  };

  const counts = Object.fromEntries(FAULTS.map((f) => [f, 0])) as Record<Fault, number>;
  const ended: { fault: Fault; at: number }[] = [];
  let senders: Promise<void>[] = [];

  /** Plays one fault; resolves when it has ended. */
  const play = async (fault: Fault) => {
    const [where, what] = fault.startsWith('db-') ? [dbProxy, fault.slice(3)] : fault.startsWith('downstream-') ? [downstreamProxy, fault.slice(11)] : [null, fault];
    const ms = between(faultMs) * (what === 'stall' ? 2 : 1);
    if (where) await proxyFault(where, what, ms, rand);
    else if (fault === 'kill') {
      const slot = pick(slots.filter((s) => s.gateway));
      slot.killing = true;
      await slot.gateway!.kill();
      slot.killing = false;
      void start(slot);
    } else {
      await cluster.stop();
      await sleep(ms);
      await cluster.start();
    }
  };

  const checks = await openStore({ databaseUrl: cluster.url, poolSize: 2 });
  try {
    await Promise.all(slots.map(start));
    senders = Array.from({ length: options.senders ?? 3 }, sender);
    let order: Fault[] = [];
    for (let n = 0; n < options.faults; n++) {
      // Every kind in turn, in a shuffled order each cycle, so a short run still plays each one.
      if (n % FAULTS.length === 0) order = [...FAULTS].sort(() => rand() - 0.5);
      const fault = order[n % FAULTS.length]!;
      // A kill while the other gateway is still starting would leave no one to answer.
      if (fault === 'kill') await Promise.all(slots.map((s) => s.starting));
      await sleep(between(gapMs));
      const faultBegan = performance.now();
      await play(fault);
      counts[fault]++;
      ended.push({ fault, at: performance.now() });
      const ok = posts.filter((p) => p.status >= 200 && p.status < 300).length;
      log(
        `fault ${n + 1}/${options.faults} ${fault} ${Math.round(performance.now() - faultBegan)} ms; ${posts.length} posts, ${((100 * ok) / Math.max(1, posts.length)).toFixed(1)} % 2xx; ${slots.filter((s) => s.gateway).length} gateways up`,
      );
    }

    // Every fault mended: the senders finish what they are retrying, then every task settles.
    await Promise.all(slots.map((s) => s.gateway ?? start(s)));
    sending = false;
    await Promise.all(senders);
    const settled = await until(() => allSettled(checks.db), 60_000);
    running = false;
    await Promise.all(slots.map((s) => s.gateway?.stop()));

    const found = [...(await violations(checks.db, downstream, answered, ACTIONS)), ...(await settledViolations(checks.db, downstream, ACTIONS))];
    if (!settled) found.push('tasks did not settle within 60 s of the last fault');
    const lost = found.filter((v) => /not stored|does not exist|but is stored as/.test(v));
    const doubled = found.filter((v) => /(has|with) ([2-9]|\d\d+) effects|sent \d+ times/.test(v));
    // What a second effect needs to be explained: the task's ledger, and the sends the downstream read for it.
    for (const id of new Set(doubled.map((v) => /task (t_\w+)/.exec(v)?.[1]).filter((id) => id !== undefined))) {
      const ledger = await rowsOf<Record<string, unknown>>(
        checks.db,
        sql`select number, kind, started_at, finished_at, class, error, decision from attempts where task_id = ${id} order by number`,
      );
      const read = downstream.requests().filter((r) => r.headers['idempotency-key'] === id);
      log(`task ${id}: attempts ${JSON.stringify(ledger)}; the downstream read ${JSON.stringify(read.map((r) => ({ method: r.method, path: r.path, atMs: Math.round(r.at - began) })))}`);
    }
    const succeeded = await rowsOf<{ id: string; action: string }>(checks.db, sql`select id, action from tasks where state = 'succeeded'`);
    const effectKeys = new Set(downstream.effects().map((e) => `${e.path}|${e.key}`));
    const phantom = succeeded.filter((t) => !effectKeys.has(`/${t.action}|${t.id}`)).map((t) => `task ${t.id} (${t.action}) succeeded with no effect`);
    const [tasks] = await rowsOf<{ n: number }>(checks.db, sql`select count(*)::int as n from tasks`);
    const recoveries = Object.fromEntries(FAULTS.map((f) => [f, [] as number[]])) as Recoveries;
    for (const { fault, at } of ended) {
      const next = posts.find((p) => p.sentAt >= at && p.status >= 200 && p.status < 300);
      if (next) recoveries[fault].push(next.at - at);
    }
    return {
      seed,
      faults: counts,
      posts: posts.length,
      ok: posts.filter((p) => p.status >= 200 && p.status < 300).length,
      accepted: answered.filter((a) => a.decision === 'accepted').length,
      tasks: tasks!.n,
      effects: downstream.effects().length,
      starts,
      unexpectedExits,
      recoveries,
      lost,
      doubled,
      phantom,
      duplicatesAccepted: [...acceptedByEvent].filter(([, n]) => n > 1).map(([event, n]) => `event ${event} was answered accepted ${n} times`),
      // A task that succeeded with no effect is in the phantom list already, found from the effects themselves.
      other: found.filter((v) => !lost.includes(v) && !doubled.includes(v) && !/ended succeeded with 0 effects/.test(v)),
      seconds: (performance.now() - began) / 1000,
    };
  } finally {
    running = false;
    sending = false;
    await Promise.allSettled(senders);
    await Promise.allSettled(slots.map((s) => s.gateway?.kill()));
    await checks.close();
    await Promise.allSettled([dbProxy.close(), downstreamProxy.close(), downstream.close()]);
    await cluster.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function proxyFault(proxy: FaultyProxy, what: string, ms: number, rand: () => number): Promise<void> {
  if (what === 'cut') return proxy.cut();
  if (what === 'stall') {
    proxy.hold();
    await sleep(ms);
    return proxy.release();
  }
  if (what === 'latency') {
    proxy.latency(20 + rand() * 280);
    await sleep(ms);
    return proxy.latency(0);
  }
  await proxy.refuse();
  await sleep(ms);
  await proxy.restore();
}

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (await check()) return true;
    await sleep(200);
  }
  return false;
}

/** The `p`th percentile of `values`, nearest-rank. */
export function percentile(values: number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
