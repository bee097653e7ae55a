import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { openStore, type Store } from '../../src/store/connect.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { SHOP_SECRET, shopifyDelivery, type Delivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { waitFor } from '../support/forwarding.ts';
import { allSettled, EACH_SAFEGUARD, idsIn, settledViolations, violations, type Answered } from '../support/invariants.ts';
import { REPO, spawnGateway, type GatewayProcess } from '../support/process.ts';
import { startReplicatedPostgres, type Replication, type ReplicatedPostgres } from '../support/replicated-postgres.ts';

/** Shopify's own, which the config leaves in place: the gateway answers by 4 s, a second kept for the way back. */
const ACK_BUDGET_MS = 5000;
/** One way, each way, between the primary and the standby: a standby in another zone. */
const LINK_DELAY_MS = 50;
/** The longest the link stays stalled before the kill. */
const STALL_MS = 500;
/** Between the kill and the promotion: a failover manager making up its mind (Patroni's is tens of seconds). */
const DECIDING_MS = 1000;
const SENDERS = 4;
const ACTIONS = EACH_SAFEGUARD;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Post {
  delivery: Delivery;
  sentAt: number;
  answeredAt: number;
  /** 0: no HTTP answer at all. */
  status: number;
  retryAfter: string | null;
  json: any;
}

/** What a run measured: the figures docs/reliability.md quotes. */
interface Figures {
  replication: Replication;
  linkDelayMs: number;
  /** How the kill came: the first 2xx after the stall (asynchronous), or the stall's end (synchronous: none came). */
  killedBy: 'a 2xx' | 'the stall';
  stalledForMs: number;
  /** Deliveries answered 2xx before the kill, and how many of them the new primary has. */
  acknowledgedBeforeKill: number;
  foundAfter: number;
  /** Of all deliveries ever answered 2xx. */
  acknowledged: number;
  lost: number;
  /** How long before the kill the lost ones had been answered: the standby's lag, as the senders saw it. */
  lostAnsweredWithinMs: number | null;
  tasksLost: number;
  /** Effects made twice on an action with a key or a lookup; requests sent twice to one with neither. */
  effectsDoubled: number;
  /** The actions (downstream paths) they were on, and the attempts the new primary has of each such task. */
  doubledOn: string[];
  doubledLedger: string[];
  plainSentTwice: number;
  /** Effects of tasks the new primary does not have. */
  effectsWithoutTask: number;
  succeededWithoutEffect: number;
  /** Deliveries sent while no primary answered, the 2xx among them answered before the promotion (none may be). */
  refusedWhileDown: number;
  twoXxWhileDown: number;
  slowestAnswerWhileDownMs: number;
  /** Connections the standby had while the gateway looked for a primary. */
  standbySessionsWhileDown: number;
  /** How long /readyz took to answer 503 while no primary answered. */
  readyzWhileDownMs: number;
  /** From the kill (and from the promotion) to the first 2xx of a delivery sent after the kill. */
  killToFirst2xxMs: number;
  promoteToFirst2xxMs: number;
  /** How long `pg_ctl promote` took to see the standby out of recovery, and from then to the first 2xx (negative:
   * the gateway was there before pg_ctl, which looks every 100 ms). */
  promotionMs: number;
  promotedToFirst2xxMs: number;
  /** From a delivery to its request downstream, on a quiet gateway after the recovery: NOTIFY's work, not the poll's. */
  quietForwardsMs: number[];
  invariantViolations: string[];
}

/**
 * The PostgreSQL primary dies under load (`npm run test:failover`): a primary and a hot standby made with
 * PostgreSQL's own tools, the gateway a real process given both hosts in DATABASE_URL, deliveries streaming in
 * and tasks being forwarded. The replication link stalls (the standby falls behind), the primary is killed with
 * -9 as soon as it acknowledges a delivery sent since, or half a second later, and the standby is promoted a
 * second after that (a failover manager deciding). Nobody touches the gateway.
 *
 * Synchronous, the promise holds: no delivery is acknowledged while the standby cannot confirm it, every 2xx is
 * found on the new primary with its tasks, and no effect is doubled. Asynchronous, what the standby had not
 * received is gone: the figures say what, and docs/reliability.md quotes them.
 */
describe.each(['sync', 'async'] as const)('the primary dies, %s standby promoted', (replication) => {
  let pair: ReplicatedPostgres;
  let downstream: Downstream;
  let gateway: GatewayProcess | undefined;
  /** The test's own connection to the new primary, after the promotion. */
  let checks: Store | undefined;
  /** Made in beforeAll: a run filtered to the other kind of standby skips this one's hooks, and would leave it. */
  let dir: string | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'oncehook-failover-config-'));
    [pair, downstream] = await Promise.all([startReplicatedPostgres({ replication, linkDelayMs: LINK_DELAY_MS }), startDownstream()]);
    const actions = Object.fromEntries(
      ACTIONS.map(({ path, safeguard, topic }) => [
        path.slice(1),
        {
          url: `${downstream.url}${path}`,
          timeoutMs: 1000,
          topics: [topic],
          backoff: { initialMs: 20, maxMs: 200 },
          ...(safeguard === 'key' ? { idempotency: 'key' } : {}),
          ...(safeguard === 'lookup' ? { lookup: `${downstream.url}${path}/lookup?key={key}` } : {}),
        },
      ]),
    );
    // Each request is committed at once and answered 30 ms later: the kill finds attempts in flight.
    for (const { path, safeguard } of ACTIONS) downstream.script(path, { otherwise: { status: 201, delayMs: 30 }, honourKey: safeguard === 'key' });
    const configFile = join(dir, 'config.json');
    writeFileSync(configFile, JSON.stringify({ sources: { shop: { adapter: 'shopify', secrets: [SHOP_SECRET], actions } } }));
    gateway = await spawnGateway({
      args: ['--config', configFile, '--lease-grace-ms', '300', '--concurrency', '16'],
      env: { DATABASE_URL: `${pair.url}?target_session_attrs=read-write` },
    });
  });
  afterAll(async () => {
    await gateway?.stop();
    await checks?.close();
    await downstream?.close();
    await pair?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const promise =
    replication === 'sync'
      ? 'every 2xx survives with its tasks, no effect is doubled, 503 while no primary answers'
      : 'what the standby had not received is lost, and measured; 503 while no primary answers';
  it(promise, async () => {
    const url = gateway!.url;
    const posts: Post[] = [];
    let sending = true;
    let armedAt: number | undefined;
    let killedAt: number | undefined;
    const kill = () => {
      if (killedAt !== undefined) return;
      void pair.killPrimary();
      killedAt = performance.now();
    };
    const send = async (delivery: Delivery): Promise<Post> => {
      const sentAt = performance.now();
      try {
        const response = await fetch(`${url}/in/shop`, { method: 'POST', headers: delivery.headers, body: delivery.body, signal: AbortSignal.timeout(10_000) });
        const answeredAt = performance.now();
        // The kill lands right after a commit made since the stall was acknowledged, before the body is even
        // read: its WAL never reached the standby.
        if (armedAt !== undefined && sentAt > armedAt && response.status === 200) kill();
        return { delivery, sentAt, answeredAt, status: response.status, retryAfter: response.headers.get('retry-after'), json: await response.json() };
      } catch {
        return { delivery, sentAt, answeredAt: performance.now(), status: 0, retryAfter: null, json: null };
      }
    };
    const sender = async () => {
      while (sending) {
        const topic = ACTIONS[Math.floor(Math.random() * ACTIONS.length)]!.topic;
        posts.push(await send(shopifyDelivery({ eventId: randomUUID(), topic })));
        await sleep(5 + Math.random() * 10);
      }
    };
    const senders = Array.from({ length: SENDERS }, sender);
    const acked = () => posts.filter((p) => p.status === 200);
    // The test's own look at the standby, ended with the senders however the test ends.
    const standby = postgres(pair.standbyUrl, { max: 1, onnotice: () => {}, fetch_types: false });
    onTestFinished(async () => {
      sending = false;
      await Promise.allSettled(senders);
      await standby.end();
    });

    // Steady load: deliveries acknowledged and tasks forwarded, attempts in flight.
    await waitFor(() => acked().length >= 100 && downstream.effects().length >= 30, 30_000);
    const standbySessions = async () => (await standby<{ n: number }[]>`select sessions::int as n from pg_stat_database where datname = 'postgres'`)[0]!.n;
    const sessionsBefore = await standbySessions();
    pair.stallLink();
    armedAt = performance.now();
    const deadline = setTimeout(kill, STALL_MS);
    await waitFor(() => killedAt !== undefined, 5000);
    clearTimeout(deadline);
    // No primary: not ready, and said at once.
    const probe = performance.now();
    expect((await fetch(`${url}/readyz`)).status).toBe(503);
    const readyzMs = Math.round(performance.now() - probe);
    await sleep(DECIDING_MS - (performance.now() - killedAt!));
    const standbySessionsWhileDown = (await standbySessions()) - sessionsBefore;
    // From the request: the standby takes writes before pg_ctl has seen it do so.
    const promotedAt = performance.now();
    await pair.promote();
    const promotedBy = performance.now();
    const promotionMs = Math.round(promotedBy - promotedAt);
    const first2xx = await waitFor(() => posts.find((p) => p.sentAt > killedAt! && p.status === 200), 30_000);
    // Load goes on against the new primary for a while: forwarding too.
    await sleep(2000);
    sending = false;
    await Promise.all(senders);

    // The senders retry what was refused, as they do; each is recorded once.
    for (const refused of posts.filter((p) => p.status !== 200)) {
      let answer = await send(refused.delivery);
      for (let i = 0; answer.status !== 200 && i < 20; i++) answer = await send(refused.delivery);
      expect(answer.status, JSON.stringify(answer.json)).toBe(200);
      expect(['accepted', 'duplicate_delivery']).toContain(answer.json.decision);
      posts.push(answer);
    }

    checks = await openStore({ databaseUrl: pair.standbyUrl, poolSize: 2 });
    const db = checks.db;
    await waitFor(() => allSettled(db), 60_000).catch(async (error: Error) => {
      throw new Error(`${error.message}: ${JSON.stringify(await rowsOf(db, sql`select state, count(*)::int from tasks group by state`))}`);
    });
    // The worker resubscribed on the new primary. Idle, it looks at the queue every 2 s: a task forwarded within
    // 0.7 s, five times running, was woken by NOTIFY (by the poll, each time by a chance of about one in three).
    const quietForwardsMs: number[] = [];
    for (let i = 0; i < 5; i++) {
      await sleep(200);
      const before = downstream.requests().length;
      const sent = performance.now();
      expect((await send(shopifyDelivery({ eventId: randomUUID(), topic: 'orders/create' }))).status).toBe(200);
      await waitFor(() => downstream.requests().length > before, 5000);
      quietForwardsMs.push(Math.round(performance.now() - sent));
    }
    expect(Math.max(...quietForwardsMs), `a quiet task waited for the poll (${quietForwardsMs.join(', ')} ms): is LISTEN subscribed on the new primary?`).toBeLessThan(700);
    const gatewayOutput = gateway!.output();
    await gateway!.stop();
    gateway = undefined;

    const answered: Answered[] = acked().map((p) => ({ receipt: p.json.receipt, decision: p.json.decision, tasks: p.json.tasks.map((t: { id: string }) => t.id) }));
    const receipts = new Set(
      (await rowsOf<{ id: string }>(db, sql`select id from deliveries where id in ${idsIn(answered.map((a) => a.receipt))}`)).map((r) => r.id),
    );
    const lostPosts = acked().filter((p) => !receipts.has(p.json.receipt));
    const announced = answered.flatMap((a) => a.tasks);
    const tasks = new Set((await rowsOf<{ id: string }>(db, sql`select id from tasks`)).map((r) => r.id));
    const succeeded = await rowsOf<{ id: string }>(db, sql`select id from tasks where state = 'succeeded'`);
    const effectKeys = new Map<string, number>();
    for (const e of downstream.effects()) effectKeys.set(`${e.path} ${e.key}`, (effectKeys.get(`${e.path} ${e.key}`) ?? 0) + 1);
    const keysWithEffect = new Set(downstream.effects().map((e) => e.key));
    const plainSends = new Map<string, number>();
    for (const r of downstream.requests('/plain').filter((r) => r.method === 'POST')) {
      const key = r.headers['idempotency-key']!;
      plainSends.set(key, (plainSends.get(key) ?? 0) + 1);
    }
    // Sent while no primary answered: refused in time, or accepted once the new primary took it, never before.
    // What the new primary's ledger says of each doubled task: how the gateway came to send it again.
    const doubledTasks = [...effectKeys].filter(([key, n]) => !key.startsWith('/plain ') && n > 1).map(([key]) => key.split(' ')[1]!);
    const doubledLedger = await rowsOf<{ task: string; attempts: string }>(
      db,
      sql`select task_id as task, string_agg(number || ':' || kind || ':' || coalesce(decision, 'open'), ' ' order by number) as attempts
        from attempts where task_id in ${idsIn(doubledTasks)} group by task_id`,
    );
    const whileDown = posts.filter((p) => p.sentAt > killedAt! && p.sentAt < promotedAt);
    const beforeKill = acked().filter((p) => p.answeredAt <= killedAt!);
    const figures: Figures = {
      replication,
      linkDelayMs: LINK_DELAY_MS,
      killedBy: posts.some((p) => p.sentAt > armedAt! && p.status === 200 && p.answeredAt <= killedAt!) ? 'a 2xx' : 'the stall',
      stalledForMs: Math.round(killedAt! - armedAt!),
      acknowledgedBeforeKill: beforeKill.length,
      foundAfter: beforeKill.filter((p) => receipts.has(p.json.receipt)).length,
      acknowledged: answered.length,
      lost: lostPosts.length,
      lostAnsweredWithinMs: lostPosts.length === 0 ? null : Math.round(killedAt! - Math.min(...lostPosts.map((p) => p.answeredAt))),
      tasksLost: announced.filter((id) => !tasks.has(id)).length,
      effectsDoubled: [...effectKeys].filter(([key, n]) => !key.startsWith('/plain ') && n > 1).length,
      doubledLedger: doubledLedger.map((r) => `${r.task} ${r.attempts}`),
      doubledOn: [...new Set([...effectKeys].filter(([key, n]) => !key.startsWith('/plain ') && n > 1).map(([key]) => key.split(' ')[0]!))],
      plainSentTwice: [...plainSends.values()].filter((n) => n > 1).length,
      effectsWithoutTask: downstream.effects().filter((e) => !tasks.has(e.key!)).length,
      succeededWithoutEffect: succeeded.filter((t) => !keysWithEffect.has(t.id)).length,
      refusedWhileDown: whileDown.filter((p) => p.status !== 200).length,
      twoXxWhileDown: whileDown.filter((p) => p.status === 200 && p.answeredAt < promotedAt).length,
      slowestAnswerWhileDownMs: Math.round(Math.max(0, ...whileDown.map((p) => p.answeredAt - p.sentAt))),
      standbySessionsWhileDown,
      readyzWhileDownMs: readyzMs,
      killToFirst2xxMs: Math.round(first2xx.answeredAt - killedAt!),
      quietForwardsMs,
      promoteToFirst2xxMs: Math.round(first2xx.answeredAt - promotedAt),
      promotionMs,
      promotedToFirst2xxMs: Math.round(first2xx.answeredAt - promotedBy),
      invariantViolations: [...(await violations(db, downstream, answered, ACTIONS)), ...(await settledViolations(db, downstream, ACTIONS))],
    };
    mkdirSync(join(REPO, 'test-artifacts'), { recursive: true });
    writeFileSync(join(REPO, 'test-artifacts', `failover-${replication}.json`), `${JSON.stringify(figures, null, 2)}\n`);
    // What the gateway and both servers said, beside the figures: to see why a run went as it did.
    writeFileSync(join(REPO, 'test-artifacts', `failover-${replication}.log`), `${gatewayOutput}\n${pair.logs()}`);
    console.log(`failover, ${replication} standby: ${JSON.stringify({ ...figures, invariantViolations: figures.invariantViolations.length })}`);

    // While no primary answered: 503 with Retry-After inside the ack budget, never a 2xx.
    expect(figures.refusedWhileDown).toBeGreaterThan(0);
    expect(figures.twoXxWhileDown).toBe(0);
    for (const p of whileDown) {
      if (p.status !== 200) {
        expect(p.status, JSON.stringify(p.json)).toBe(503);
        expect(p.retryAfter).toMatch(/^\d+$/);
      }
      expect(p.answeredAt - p.sentAt).toBeLessThan(ACK_BUDGET_MS);
    }
    // Nobody restarted the gateway: it found the new primary by itself.
    expect(figures.promoteToFirst2xxMs).toBeLessThan(10_000);
    expect(figures.succeededWithoutEffect).toBe(0);

    if (replication === 'sync') {
      // Nothing was acknowledged while the standby could not confirm it: the stall ended in the kill.
      expect(figures.killedBy).toBe('the stall');
      expect(figures.foundAfter).toBe(figures.acknowledgedBeforeKill);
      expect(figures.lost).toBe(0);
      expect(figures.tasksLost).toBe(0);
      expect(figures.effectsDoubled).toBe(0);
      expect(figures.plainSentTwice).toBe(0);
      expect(figures.effectsWithoutTask).toBe(0);
      expect(figures.invariantViolations).toEqual([]);
    } else {
      // The delivery whose acknowledgement set off the kill was committed after the stall: lost, at least.
      expect(figures.killedBy).toBe('a 2xx');
      expect(figures.lost).toBeGreaterThan(0);
      expect(figures.invariantViolations.length).toBeGreaterThan(0);
    }
  }, 150_000);
});
