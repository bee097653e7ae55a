import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { SHOP_SECRET, shopifyDelivery, type Delivery } from './deliveries.ts';
import { startDownstream, type Step } from './downstream.ts';
import { allSettled, settledViolations, violations, type Answered, type WatchedAction } from './invariants.ts';
import { spawnGateway, type GatewayProcess } from './process.ts';
import { startProxy } from './tcp-proxy.ts';
import { seededRandom } from './random.ts';

/** Where in a webhook's way a kill -9 lands. */
export const PHASES = ['ingest-before-commit', 'ingest-after-commit', 'attempt-before-effect', 'attempt-after-effect', 'lease-renewal'] as const;
export type Phase = (typeof PHASES)[number];

export interface CrashOptions {
  kills: number;
  /** A PostgreSQL database of the run's own (it gets a trigger and a setting only a test may have). */
  databaseUrl: string;
  seed?: number;
  log?: (line: string) => void;
}

export interface CrashSummary {
  seed: number;
  kills: number;
  /** Deliveries answered 2xx, and those answered `accepted`. */
  deliveries: number;
  accepted: number;
  tasks: number;
  /** Effects the downstream made, and the requests it read. */
  effects: number;
  requests: number;
  /** How many kills landed in each phase, as observed (a kill can land in several). */
  phases: Record<Phase, number>;
  violations: string[];
}

const TIMEOUT_MS = 1000;
const LEASE_GRACE_MS = 200;
/** Renewal runs every third of a lease (src/forward/attempt.ts). */
const RENEWAL_MS = (TIMEOUT_MS + LEASE_GRACE_MS) / 3;
const ACTIONS: (WatchedAction & { topic: string })[] = [
  { path: '/keyed', safeguard: 'key', topic: 'orders/create' },
  { path: '/looked', safeguard: 'lookup', topic: 'orders/updated' },
  { path: '/plain', safeguard: 'none', topic: 'orders/paid' },
];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (await check()) return true;
    await sleep(5);
  }
  return false;
}

/**
 * Makes ingest's commit slow on demand, inside PostgreSQL: a deferred trigger sleeps at COMMIT, once per
 * transaction, while `chaos_commit_delay.ms` > 0. With `client_connection_check_interval` set, a backend whose
 * client died mid-sleep aborts, so a kill then lands before the commit; holding its replies lets the commit
 * finish unseen, so a kill then lands after it.
 */
async function installSlowCommit(sql: postgres.Sql): Promise<void> {
  await sql.unsafe(`
    create table chaos_commit_delay (ms int not null);
    insert into chaos_commit_delay values (0);
    create function chaos_slow_commit() returns trigger language plpgsql as $$
    declare delay int;
    begin
      select ms into delay from chaos_commit_delay;
      if delay > 0 and current_setting('chaos.slept', true) is distinct from 'yes' then
        perform set_config('chaos.slept', 'yes', true);
        perform pg_sleep(delay / 1000.0);
      end if;
      return null;
    end $$;
    create constraint trigger chaos_slow_commit after insert on deliveries
      deferrable initially deferred for each row execute function chaos_slow_commit();`);
}

/** Runs `kills` rounds of: start the gateway, stream deliveries, wait for the round's phase, kill -9, check. */
export async function runCrashMatrix(options: CrashOptions): Promise<CrashSummary> {
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const rand = seededRandom(seed);
  const between = (min: number, max: number) => min + rand() * (max - min);
  const log = options.log ?? (() => {});
  const target = new URL(options.databaseUrl);
  const sql = postgres(options.databaseUrl, { max: 2, onnotice: () => {} });
  await sql.unsafe(`alter database ${target.pathname.slice(1)} set client_connection_check_interval = '10ms'`);
  const downstream = await startDownstream();
  const proxy = await startProxy(target.hostname, Number(target.port || 5432));
  const viaProxy = new URL(options.databaseUrl);
  viaProxy.port = String(proxy.port);

  const configFile = join(mkdtempSync(join(tmpdir(), 'oncehook-crash-')), 'config.json');
  const action = ({ path, safeguard, topic }: (typeof ACTIONS)[number]) => ({
    url: `${downstream.url}${path}`,
    timeoutMs: TIMEOUT_MS,
    topics: [topic],
    backoff: { initialMs: 20, maxMs: 200 },
    ...(safeguard === 'key' ? { idempotency: 'key' } : {}),
    ...(safeguard === 'lookup' ? { lookup: `${downstream.url}${path}/lookup?key={key}` } : {}),
  });
  const actions = Object.fromEntries(ACTIONS.map((a) => [a.path.slice(1), action(a)]));
  writeFileSync(configFile, JSON.stringify({ sources: { shop: { adapter: 'shopify', secrets: [SHOP_SECRET], actions } } }));
  const start = () =>
    spawnGateway({
      args: ['--config', configFile, '--lease-grace-ms', String(LEASE_GRACE_MS)],
      env: { DATABASE_URL: viaProxy.toString() },
    });

  let gateway: GatewayProcess | undefined;
  const setCommitDelay = (ms: number) => sql`update chaos_commit_delay set ms = ${ms}`;
  const sleepingCommits = async () =>
    (await sql<{ n: number }[]>`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event = 'PgSleep'`)[0]!.n;

  // Deliveries stream in from three senders for the whole run; only what is answered 2xx is a promise.
  const answered: Answered[] = [];
  const sent: Delivery[] = [];
  /** Each post awaiting its answer, by the delivery ID it carries (one delivery may be in flight twice). */
  const inFlight = new Set<{ deliveryId: string }>();
  let sending = true;
  const sender = async () => {
    while (sending) {
      const url = gateway?.url;
      const roll = rand();
      const earlier = sent.length > 0 ? sent[Math.floor(rand() * sent.length)]! : undefined;
      const topic = ACTIONS[Math.floor(rand() * ACTIONS.length)]!.topic;
      const delivery =
        earlier && roll < 0.1
          ? earlier // the sender retrying one delivery
          : earlier && roll < 0.2
            ? shopifyDelivery({ eventId: earlier.headers['x-shopify-event-id']!, topic: earlier.headers['x-shopify-topic']! }) // a second subscription
            : shopifyDelivery({ eventId: randomUUID(), topic });
      if (delivery !== earlier) sent.push(delivery);
      const post = { deliveryId: delivery.headers['x-shopify-webhook-id']! };
      inFlight.add(post);
      try {
        const response = await fetch(`${url}/in/shop`, {
          method: 'POST',
          headers: delivery.headers,
          body: delivery.body,
          signal: AbortSignal.timeout(5000),
        });
        const json = (await response.json()) as { receipt?: string; decision?: string; tasks?: { id: string }[] };
        if (response.ok) answered.push({ receipt: json.receipt!, decision: json.decision!, tasks: (json.tasks ?? []).map((t) => t.id) });
      } catch {
        await sleep(50); // down, or killed mid-answer: a real sender retries later
      } finally {
        inFlight.delete(post);
      }
      await sleep(between(10, 40));
    }
  };
  let senders: Promise<void>[] = [];

  const phases = Object.fromEntries(PHASES.map((p) => [p, 0])) as Record<Phase, number>;
  const found: string[] = [];
  let order: Phase[] = [];
  const script = (step: Step) => {
    for (const a of ACTIONS) downstream.script(a.path, { otherwise: step, honourKey: a.safeguard === 'key' });
  };
  const openLongerThan = (ms: number) => downstream.open().some((o) => performance.now() - o.at > ms);

  try {
    gateway = await start();
    await installSlowCommit(sql);
    senders = [sender(), sender(), sender()];
    for (let kill = 0; kill < options.kills; kill++) {
      // Every phase in turn, in a shuffled order each cycle, so a short run still aims at each of them.
      if (kill % PHASES.length === 0) order = [...PHASES].sort(() => rand() - 0.5);
      const planned = order[kill % PHASES.length]!;
      gateway ??= await start();
      await sleep(between(20, 150));
      if (planned === 'ingest-before-commit' || planned === 'ingest-after-commit') {
        script({ status: 201 });
        await setCommitDelay(planned === 'ingest-before-commit' ? 400 : 150);
        await until(async () => (await sleepingCommits()) > 0, 3000);
        if (planned === 'ingest-before-commit') await sleep(between(0, 250));
        else {
          proxy.holdReplies();
          await until(async () => (await sleepingCommits()) === 0, 3000);
          await sleep(20);
        }
      } else if (planned === 'attempt-before-effect') {
        script({ status: 201, commitAfterMs: 200, delayMs: 50 });
        await until(() => downstream.open().some((o) => !o.committed), 3000);
        await sleep(between(0, 120));
      } else if (planned === 'attempt-after-effect') {
        script({ status: 201, delayMs: 400 });
        await until(() => downstream.open().some((o) => o.committed), 3000);
        await sleep(between(0, 200));
      } else {
        script({ status: 201, delayMs: 700 });
        await until(() => openLongerThan(RENEWAL_MS + 10), 3000);
        await sleep(between(0, 150));
      }

      const committing = (await sleepingCommits()) > 0;
      const caught = [...inFlight].map((p) => p.deliveryId);
      const open = downstream.open();
      const renewed = open.some((o) => performance.now() - o.at > RENEWAL_MS);
      await gateway.kill();
      gateway = undefined;
      proxy.release();
      await setCommitDelay(0);

      const committed = new Set(
        (await sql<{ delivery_id: string }[]>`select delivery_id from deliveries where delivery_id = any(${caught})`).map((r) => r.delivery_id),
      );
      const landed: Phase[] = [];
      // A transaction was held at COMMIT when the process died, and a delivery it carried is absent: rolled back.
      if (committing && caught.some((id) => !committed.has(id))) landed.push('ingest-before-commit');
      if (caught.some((id) => committed.has(id))) landed.push('ingest-after-commit');
      if (open.some((o) => !o.committed)) landed.push('attempt-before-effect');
      if (open.some((o) => o.committed)) landed.push('attempt-after-effect');
      if (renewed) landed.push('lease-renewal');
      for (const phase of landed) phases[phase]++;

      const now = await violations(sql, downstream, answered, ACTIONS);
      found.push(...now.map((v) => `kill ${kill + 1} (${planned}): ${v}`));
      log(`kill ${kill + 1}/${options.kills} aimed at ${planned}, landed in ${landed.join(', ') || 'a quiet moment'}; ${answered.length} answered so far; ${now.length} violations`);
    }

    // The last restart: traffic stops, every task settles, and each effect is counted.
    gateway = await start();
    sending = false;
    await Promise.all(senders);
    script({ status: 201 });
    if (!(await until(() => allSettled(sql), 30_000))) found.push('tasks did not settle within 30 s of the last restart');
    found.push(...(await violations(sql, downstream, answered, ACTIONS)), ...(await settledViolations(sql, downstream, ACTIONS)));
    const [tasks] = await sql<{ n: number }[]>`select count(*)::int as n from tasks`;
    return {
      seed,
      kills: options.kills,
      deliveries: answered.length,
      accepted: answered.filter((a) => a.decision === 'accepted').length,
      tasks: tasks!.n,
      effects: downstream.effects().length,
      requests: downstream.requests().length,
      phases,
      violations: found,
    };
  } finally {
    sending = false;
    await Promise.allSettled(senders);
    await gateway?.stop();
    await proxy.close();
    await downstream.close();
    await sql.end();
  }
}
