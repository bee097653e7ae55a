import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { destinations } from '../../src/store/schema.ts';
import { ADMIN_TOKEN, adminApi } from '../support/admin.ts';
import { closeAfterEach } from '../support/close-after-each.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { ledger, task, taskIn, waitFor } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

/**
 * A lookup on another origin than the action's sends, answering for that origin rather than for the effect: 429
 * cools it, 401 pauses it. Its own gateway and downstreams per case: cooldowns and pauses belong to an origin.
 * `maxAttempts: 1` is one lookup per task: a lookup spent on such an answer would send the task to review.
 */
const FAST = { timeoutMs: 400, backoff: { initialMs: 20, maxMs: 100 }, maxAttempts: 1, referencePointer: '/id' };

let gateway: TestGateway;
const closing = closeAfterEach();

/** `api` takes the action's sends, `search` answers its lookups. */
async function start(action: object = {}): Promise<{ api: Downstream; search: Downstream }> {
  const [api, search] = await Promise.all([startDownstream().then(closing), startDownstream().then(closing)]);
  gateway = await startTestGateway(
    shopConfig({ a: { url: `${api.url}/a`, topics: ['a'], lookup: `${search.url}/a/lookup?key={key}`, ...FAST, ...action } }),
    { adminToken: ADMIN_TOKEN },
  );
  closing(gateway);
  return { api, search };
}

async function deliver(): Promise<string> {
  const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: `a-${Math.random()}`, topic: 'a' }));
  expect(answer.json.decision).toBe('accepted');
  return answer.json.tasks[0].id as string;
}

const db = () => gateway.store.db;

async function standing(origin: string) {
  const [row] = await db().select().from(destinations).where(eq(destinations.origin, origin));
  return row;
}

const lookupsOf = (search: Downstream, id: string) => search.requests('/a').filter((r) => r.headers['oncehook-task-id'] === id);

describe("a lookup's answer about its own origin", () => {
  it('429 with Retry-After cools the lookup origin: no lookup there until it ends, sends elsewhere go on, then it settles', async () => {
    const { api, search } = await start();
    // Two sends answer 500 (the effect may exist, so the lookup decides); later ones succeed.
    api.script('/a', { steps: [{ status: 500 }, { status: 500 }] });
    search.script('/a', { lookup: [{ status: 429, retryAfter: '3' }, { status: 200, json: { id: 'found-1' } }, { status: 200, json: { id: 'found-2' } }] });

    const first = await deliver();
    await waitFor(async () => (await standing(search.url))?.cooldownUntil ?? false);
    const [asked] = search.requests('/a');
    expect(asked!.headers['oncehook-task-id']).toBe(first);
    expect(await task(db(), first)).toMatchObject({ state: 'outcome_unknown', lookups: 0 });
    // Only the lookup's origin cooled: the action's own is open.
    expect((await standing(api.url))?.cooldownUntil ?? null).toBeNull();

    // During the cooldown: a second task's lookup falls due (timeoutMs after its 500) and waits; a third task's send,
    // to the action's origin, goes.
    const second = await deliver();
    // The third is sent after the second's 500, so it gets the 201.
    await waitFor(() => api.requests('/a').length === 2);
    const third = await deliver();
    await taskIn(db(), third, 'succeeded');

    await taskIn(db(), first, 'succeeded');
    await taskIn(db(), second, 'succeeded');
    const later = search.requests('/a').slice(1);
    expect(later).toHaveLength(2);
    for (const lookup of later) expect(lookup.at - asked!.at).toBeGreaterThanOrEqual(2950);
    const sent = api.requests('/a').find((r) => r.headers['oncehook-task-id'] === third)!;
    expect(sent.at).toBeLessThan(Math.min(...later.map((r) => r.at)));
    expect(lookupsOf(search, second)).toHaveLength(1);

    // The 429 was not counted: with one lookup allowed, the first task's success came from its second ask.
    const done = await task(db(), first);
    expect(done.lookups).toBe(1);
    expect(done.resultReference).toMatch(/^found-/);
    expect((await ledger(db(), first)).map((r) => [r.kind, r.class, r.responseStatus])).toEqual([
      ['send', 'unknown', 500],
      ['lookup', 'lookup_unanswered', 429],
      ['lookup', 'lookup_found', 200],
    ]);
    expect((await ledger(db(), first))[1]!.decision).toMatch(/Retry-After.*cooled down.*not counted/);
  });

  it('401 pauses the lookup origin: the task stays outcome_unknown, nothing is asked there until a person resumes it', async () => {
    const { api, search } = await start();
    api.script('/a', { steps: [{ status: 500 }, { status: 500 }] });
    search.script('/a', { lookup: [{ status: 401 }, { status: 200, json: { id: 'found-1' } }, { status: 200, json: { id: 'found-2' } }] });

    const first = await deliver();
    const paused = await waitFor(async () => {
      const row = await standing(search.url);
      return row?.pausedAt ? row : false;
    });
    expect(paused.pausedReason).toBe(`401 refused oncehook's lookup for ${first}`);
    expect((await standing(api.url))?.pausedAt ?? null).toBeNull();

    // A second unknown outcome whose lookup falls due while paused, and a send to the action's origin, which goes.
    const second = await deliver();
    await waitFor(() => api.requests('/a').length === 2);
    const third = await deliver();
    await taskIn(db(), third, 'succeeded');
    await waitFor(async () => (await ledger(db(), second)).length === 1 && (await task(db(), second)).state === 'outcome_unknown');
    // Absence cannot be awaited: give the second task's lookup its timeoutMs and a few polls (200 ms in tests).
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(search.requests('/a')).toHaveLength(1);
    expect(await task(db(), first)).toMatchObject({ state: 'outcome_unknown', lookups: 0 });
    expect(await task(db(), second)).toMatchObject({ state: 'outcome_unknown', lookups: 0 });

    const resumed = await adminApi(gateway.url)(`/api/destinations/${encodeURIComponent(search.url)}/resume`, { body: { note: 'lookup token fixed' } });
    expect(resumed.status).toBe(200);
    await taskIn(db(), first, 'succeeded');
    await taskIn(db(), second, 'succeeded');
    expect(lookupsOf(search, first)).toHaveLength(2);
    expect(lookupsOf(search, second)).toHaveLength(1);
    expect((await ledger(db(), first)).map((r) => [r.kind, r.class, r.responseStatus])).toEqual([
      ['send', 'unknown', 500],
      ['lookup', 'lookup_unanswered', 401],
      ['lookup', 'lookup_found', 200],
    ]);
  });

  // The claim holds an unknown outcome only when it would ask the lookup. A keyed resend goes to the action's origin:
  // held by the lookup origin's pause, it would wait for an API it never calls, its key perhaps forgotten meanwhile.
  it("a keyed resend is not held by the lookup origin's pause", async () => {
    const { api, search } = await start({ idempotency: 'key', maxAttempts: 3 });
    await db().insert(destinations).values({ origin: search.url, pausedAt: new Date(), pausedReason: 'paused by the test' });
    api.script('/a', { steps: [{ status: 500 }], honourKey: true });
    const id = await deliver();
    await taskIn(db(), id, 'succeeded');
    expect(api.requests('/a').map((r) => r.headers['idempotency-key'])).toEqual([id, id]);
    expect(search.requests('/a')).toHaveLength(0);
  });
});
