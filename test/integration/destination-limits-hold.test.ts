import { inArray, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tasks as taskTable } from '../../src/store/schema.ts';
import { ADMIN_TOKEN, adminApi } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream, type Step } from '../support/downstream.ts';
import { ledger, rows, taskIn, waitFor } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { busiestWindow } from '../support/windows.ts';

const PER_SECOND = 10;
const BURST = 2;
const MAX_IN_FLIGHT = 2;
/** Generous: in this process the gateway and the downstreams share one event loop, which stalled up to ~0.3 s. */
const PATIENT = { timeoutMs: 5000, backoff: { initialMs: 20, maxMs: 100 } };

// One gateway, one origin (`api`) limited to 10 a second, a burst of 2 and 2 at once, on each engine. `free` is a
// second origin no destination limits: an action sends there and asks its lookups at `api`.
//
// How the rate is checked here: every request that reached `api` must be an attempt the limiter counted, and the
// attempts' claim times — the database's clock, the one the token bucket runs on — must hold perSecond + burst in
// any second. The downstream's own arrival stamps are not used for the rate in this file: taken on an event loop the
// gateway shares, they moved by up to the loop's stalls (~0.3 s seen under the suite's load), and once showed 13 in
// a second where the claims held 11. test/e2e/destination-limits.test.ts checks the arrivals, from processes apart.
let gateway: TestGateway;
let api: Downstream;
let free: Downstream;

beforeAll(async () => {
  [api, free] = await Promise.all([startDownstream(), startDownstream()]);
  const to = (url: string, topic: string, extra: object = {}) => ({ url, topics: [topic], ...PATIENT, ...extra });
  gateway = await startTestGateway(
    {
      destinations: { [api.url]: { rateLimit: { perSecond: PER_SECOND, burst: BURST }, maxInFlight: MAX_IN_FLIGHT } },
      ...shopConfig({
        held: to(`${api.url}/held`, 'held', { idempotency: 'key' }),
        paced: to(`${api.url}/paced`, 'paced', { idempotency: 'key' }),
        cooled: to(`${api.url}/cooled`, 'cooled', { idempotency: 'key' }),
        // No key: an unknown outcome is settled by asking the lookup, at the limited origin, `timeoutMs` later.
        looked: to(`${free.url}/looked`, 'looked', { lookup: `${api.url}/looked/lookup?key={key}`, timeoutMs: 1500 }),
      }),
    },
    { adminToken: ADMIN_TOKEN },
  );
});
afterAll(async () => {
  await gateway?.close();
  await Promise.all([api?.close(), free?.close()]);
});

const db = () => gateway.store.db;
const admin = () => adminApi(gateway.url);

async function deliver(topic: string, count: number): Promise<string[]> {
  const answers = await Promise.all(
    Array.from({ length: count }, (_, i) => post(gateway.url, 'shop', shopifyDelivery({ eventId: `${topic}-${i}-${Math.random()}`, topic }))),
  );
  return answers.map((answer) => {
    expect(answer.json?.decision).toBe('accepted');
    return answer.json.tasks[0].id as string;
  });
}

async function states(ids: string[]): Promise<Record<string, string>> {
  const found = await db().select({ id: taskTable.id, state: taskTable.state }).from(taskTable).where(inArray(taskTable.id, ids));
  return Object.fromEntries(found.map((row) => [row.id, row.state]));
}

const apiView = async () => (await admin()('/api/destinations')).json.items.find((d: { origin: string }) => d.origin === api.url);

/** The bucket full again: what a test starts from, so its first second may use the whole burst. */
const bucketFull = () => waitFor(async () => (await apiView()).tokens === BURST);

/** Holds `api`'s tasks back (a pause), so a test can fill a backlog and let it go at once, with a full bucket. */
async function paused<T>(fill: () => Promise<T>): Promise<T> {
  await db().execute(sql`insert into destinations (origin, paused_at, paused_reason) values (${api.url}, now(), 'the test fills a backlog')
    on conflict (origin) do update set paused_at = excluded.paused_at, paused_reason = excluded.paused_reason`);
  const filled = await fill();
  await bucketFull();
  const resumed = await admin()(`/api/destinations/${encodeURIComponent(api.url)}/resume`, { body: { note: 'backlog in' } });
  expect(resumed.status).toBe(200);
  return filled;
}

/** The claim times, in the database's clock, of every request that went to `api`: the sends and the lookups. */
async function claimsAtApi(): Promise<number[]> {
  const found = await rows<{ ms: number }>(
    db(),
    sql`select extract(epoch from a.started_at)::float8 * 1000 as ms from attempts a join tasks t on t.id = a.task_id
        where (t.action in ('held', 'paced', 'cooled') and a.kind = 'send') or (t.action = 'looked' and a.kind = 'lookup')
        order by a.started_at, a.id`,
  );
  return found.map((row) => row.ms);
}

/** The origin's limits over everything this file has sent it so far. */
async function expectWithinLimits() {
  const claims = await claimsAtApi();
  // Nothing reached the origin that the limiter did not count…
  expect(api.requests(), 'requests to the origin, each one a counted attempt').toHaveLength(claims.length);
  // …and what it counted held the rate, in any second (sliding), and the concurrency, as the downstream saw it.
  expect(busiestWindow(claims), 'claims for the origin in its busiest second').toBeLessThanOrEqual(PER_SECOND + BURST);
  expect(api.peakOpen(), 'requests open at the origin at once').toBeLessThanOrEqual(MAX_IN_FLIGHT);
}

describe('an origin a destination limits', () => {
  it('holds a task back as pending, and the API shows the limit, the requests in flight and the tasks waiting', async () => {
    // The first two answers come late: both slots stay taken while the rest wait.
    api.script('/held', { steps: [{ status: 201, delayMs: 1500 }, { status: 201, delayMs: 1500 }], otherwise: { status: 201 } });
    const ids = await deliver('held', 5);
    await waitFor(() => api.open().length === MAX_IN_FLIGHT);

    const now = await states(ids);
    const waiting = ids.filter((id) => now[id] === 'pending');
    expect(Object.values(now).sort()).toEqual(['in_progress', 'in_progress', 'pending', 'pending', 'pending']);
    // Held, not tried: nothing in their ledger.
    for (const id of waiting) expect(await ledger(db(), id)).toEqual([]);
    expect(await apiView()).toMatchObject({
      status: 'open',
      actions: expect.arrayContaining(['shop/held']),
      limit: { perSecond: PER_SECOND, burst: BURST, maxInFlight: MAX_IN_FLIGHT },
      inFlight: MAX_IN_FLIGHT,
      waiting: 3,
      tokens: expect.any(Number),
    });

    // Still held a while later: no third request, and the waiting tasks neither failed nor were tried.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(api.requests('/held')).toHaveLength(MAX_IN_FLIGHT);
    expect(Object.values(await states(waiting))).toEqual(['pending', 'pending', 'pending']);

    for (const id of ids) await taskIn(db(), id, 'succeeded');
    expect(api.effects('/held').map((e) => e.key).sort()).toEqual([...ids].sort());
    expect(await apiView()).toMatchObject({ inFlight: 0, waiting: 0 });
    await expectWithinLimits();
  });

  it('sends no more than perSecond + burst in any second, and never more than maxInFlight at once', async () => {
    const TASKS = 30;
    // 40–100 ms late: requests overlap, so the concurrency limit is tested as well as the rate.
    api.script('/paced', { steps: Array.from({ length: TASKS }, (_, i): Step => ({ status: 201, delayMs: 40 + ((i * 23) % 61) })) });
    const ids = await paused(() => deliver('paced', TASKS));
    for (const id of ids) await taskIn(db(), id, 'succeeded');

    expect(api.effects('/paced').map((e) => e.key).sort()).toEqual([...ids].sort());
    expect(api.peakOpen('/paced')).toBe(MAX_IN_FLIGHT);
    // The rate held them back: a token bucket lets N requests go in no less than (N - burst) / perSecond seconds.
    const claims = (await claimsAtApi()).slice(-TASKS);
    // (1 ms for the float arithmetic of the bucket.)
    expect(Math.max(...claims) - Math.min(...claims)).toBeGreaterThanOrEqual(((TASKS - BURST) / PER_SECOND) * 1000 - 1);
    await expectWithinLimits();
  });

  it('counts the lookups it asks there, for an action that sends elsewhere', async () => {
    const TASKS = 8;
    // Every send is read and its connection dropped: the outcome is unknown, and with no key the lookup decides.
    free.script('/looked', { otherwise: 'reset-after-read' });
    api.script('/looked', { lookup: Array.from({ length: TASKS }, (): Step => ({ status: 200, json: { id: 'found' }, delayMs: 150 })) });
    // Not paused first: a pause holds an action's sends by the origin they go to, and these go to `free`.
    await bucketFull();
    const ids = await deliver('looked', TASKS);
    for (const id of ids) {
      await taskIn(db(), id, 'succeeded');
      expect((await ledger(db(), id)).map((a) => a.class)).toEqual(['unknown', 'lookup_found']);
    }
    // The sends went to the origin no destination limits; the lookups to the limited one, two at a time.
    expect(free.requests('/looked')).toHaveLength(TASKS);
    expect(api.requests('/looked').map((r) => r.method)).toEqual(Array(TASKS).fill('GET'));
    expect(api.peakOpen('/looked')).toBe(MAX_IN_FLIGHT);
    await expectWithinLimits();
  });

  it('is still cooled down by a 429, and its tasks wait for the cooldown', async () => {
    api.script('/cooled', { steps: [{ status: 429, retryAfter: '1' }] });
    const [first] = await deliver('cooled', 1);
    const cooling = await waitFor(async () => {
      const view = await apiView();
      return view.status === 'cooling' ? view : undefined;
    });
    const until = new Date(cooling.cooldownUntil).getTime();
    // A task that arrives during the cooldown waits for it too, pending.
    const [second] = await deliver('cooled', 1);
    expect((await states([second!]))[second!]).toBe('pending');

    await taskIn(db(), first!, 'succeeded');
    await taskIn(db(), second!, 'succeeded');
    const [refused, ...after] = api.requests('/cooled');
    expect(refused!.headers['idempotency-key']).toBe(first);
    expect(after).toHaveLength(2);
    // Nothing went to the origin until the cooldown was over: claimed after it, in the database's clock.
    const claims = (await claimsAtApi()).slice(-2);
    for (const at of claims) expect(at).toBeGreaterThanOrEqual(until);
    await expectWithinLimits();
  });
});
