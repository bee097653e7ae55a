import { eq } from 'drizzle-orm';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/ids.ts';
import { destinations } from '../../src/store/schema.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { STRIPE_SECRET, stripeRequest, unixSeconds } from '../unit/adapters/fixtures.ts';
import { startDownstream, type Downstream } from '../support/downstream.ts';
import { freshDatabase } from '../support/engine.ts';
import { ledger, task, taskIn, waitFor } from '../support/forwarding.ts';
import { freePort } from '../support/free-port.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

/** Small timeouts and backoff keep the suite fast; every case still runs over real HTTP. */
const FAST = { timeoutMs: 400, backoff: { initialMs: 20, maxMs: 100 } };
const SIGNING_SECRET = `whsec_${Buffer.from('a signing secret of thirty-two b').toString('base64')}`;

let gateway: TestGateway;
let downstream: Downstream;
/** Cooldowns and pauses apply to a whole origin, so those cases get downstreams of their own. */
let cooling: Downstream;
let refusing: Downstream;
let keeping: Downstream;
let closedPort: number;

beforeAll(async () => {
  [downstream, cooling, refusing, keeping] = await Promise.all([startDownstream(), startDownstream(), startDownstream(), startDownstream()]);
  closedPort = await freePort();
  const to = (path: string, extra: object = {}) => ({ url: `${downstream.url}${path}`, topics: [path.slice(1)], ...FAST, ...extra });
  const shop = shopConfig({
    headers: to('/headers', { idempotency: 'key', signingSecret: SIGNING_SECRET }),
    'sibling-ok': { ...to('/sibling-ok'), topics: ['siblings'] },
    'sibling-bad': { ...to('/sibling-bad'), topics: ['siblings'] },
    located: to('/located'),
    endless: to('/endless'),
    flaky: to('/flaky', { idempotency: 'key' }),
    erring: to('/erring'),
    dated: to('/dated'),
    throttled: { ...to('/throttled'), url: `${cooling.url}/throttled` },
    neighbour: { ...to('/neighbour'), url: `${cooling.url}/neighbour` },
    invalid: to('/invalid'),
    unauthorized: { ...to('/unauthorized'), url: `${refusing.url}/unauthorized` },
    blocked: { ...to('/blocked'), url: `${refusing.url}/blocked` },
    hang: to('/hang'),
    reset: to('/reset'),
    refused: { ...to('/refused'), url: `http://127.0.0.1:${closedPort}/refused`, maxAttempts: 2 },
    dns: { ...to('/dns'), url: 'http://oncehook-test.invalid/dns', maxAttempts: 1 },
    tls: { ...to('/tls'), url: `${downstream.url.replace('http:', 'https:')}/tls`, maxAttempts: 1 },
    unanswered: to('/unanswered', { lookup: `${downstream.url}/unanswered/lookup?key={key}`, maxAttempts: 2 }),
    resent: { ...to('/resent', { idempotency: 'key', keyRetention: '2500ms' }), url: `${keeping.url}/resent` },
    // A lookup on another origin than the action's.
    absent: to('/absent', { lookup: `${cooling.url}/absent/lookup?key={key}` }),
  });
  // IDs and topics read from a JSON body, where they can hold any Unicode.
  const stripe = { adapter: 'stripe', secrets: [STRIPE_SECRET], actions: { unicode: { url: `${downstream.url}/unicode`, ...FAST } } };
  gateway = await startTestGateway({ sources: { ...shop.sources, stripe } });
});
afterAll(async () => {
  await gateway?.close();
  await Promise.all([downstream?.close(), cooling?.close(), refusing?.close(), keeping?.close()]);
});

/** Delivers one event whose topic admits exactly one action; returns that action's task ID. */
async function deliver(action: string, body?: string): Promise<string> {
  const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: `${action}-${Math.random()}`, topic: action, body }));
  expect(answer.json.decision).toBe('accepted');
  expect(answer.json.tasks).toHaveLength(1);
  return answer.json.tasks[0].id;
}

const db = () => gateway.store.db;

describe('sending', () => {
  it('sends the stored bytes exactly, with the content type, the task headers and a Standard Webhooks signature', async () => {
    const body = '{"id":1,  "note":"spacing and ünïcode kept"}';
    const id = await deliver('headers', body);
    const done = await taskIn(db(), id, 'succeeded');

    const [request] = downstream.requests('/headers');
    expect(request!.body.toString('utf8')).toBe(body);
    expect(request!.headers).toMatchObject({
      'content-type': 'application/json',
      'idempotency-key': id,
      'oncehook-task-id': id,
      'oncehook-attempt': '1',
      'oncehook-source': 'shop',
      'oncehook-topic': 'headers',
      'webhook-id': id,
    });
    expect(request!.headers['oncehook-event-id']).toMatch(/^headers-/);
    expect(() => new Webhook(SIGNING_SECRET).verify(request!.body.toString('utf8'), request!.headers)).not.toThrow();

    const [row] = await ledger(db(), id);
    expect(row).toMatchObject({ number: 1, kind: 'send', class: 'success', responseStatus: 201, decision: 'succeeded' });
    expect(row!.requestSha256).toBe(sha256Hex(Buffer.from(body)));
    expect(row!.requestSha256).toBe(done.bodySha256);
    expect(row!.finishedAt!.getTime()).toBeGreaterThanOrEqual(row!.startedAt.getTime());
  });

  it('an event ID and a topic that are not plain ASCII reach the downstream percent-encoded, not never', async () => {
    const eventId = `evt_€_${Math.random()}`;
    const topic = 'café ☕\nnext';
    const signed = stripeRequest({ payload: JSON.stringify({ id: eventId, type: topic, created: 1714564790 }), timestamp: unixSeconds(new Date()) });
    const answer = await fetch(`${gateway.url}/in/stripe`, { method: 'POST', headers: signed.headers, body: Buffer.from(signed.body) });
    const { tasks: [created] } = (await answer.json()) as { tasks: Array<{ id: string }> };
    await taskIn(db(), created!.id, 'succeeded');
    const [request] = downstream.requests('/unicode');
    expect(request!.headers['oncehook-event-id']).toBe(encodeURIComponent(eventId));
    expect(request!.headers['oncehook-topic']).toBe(encodeURIComponent(topic));
    expect(decodeURIComponent(request!.headers['oncehook-topic'] as string)).toBe(topic);
  });

  it('a signing secret the signer cannot decode stops the start, naming the action', async () => {
    const database = await freshDatabase();
    try {
      const config = shopConfig({ signed: { url: `${downstream.url}/signed`, signingSecret: 'not base64!' } });
      await expect(startTestGateway(config, { database })).rejects.toThrow(/sources\.shop\.actions\.signed\.signingSecret/);
    } finally {
      await database.drop();
    }
  });

  it('each action has its own task: one failing does not hold back its sibling', async () => {
    downstream.script('/sibling-bad', { steps: [{ status: 400 }] });
    const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: `siblings-${Math.random()}`, topic: 'siblings' }));
    const idOf = (action: string) => answer.json.tasks.find((t: { action: string }) => t.action === action).id;
    await taskIn(db(), idOf('sibling-bad'), 'failed');
    await taskIn(db(), idOf('sibling-ok'), 'succeeded');
  });

  it('takes the reference from the Location header when no JSON pointer is configured', async () => {
    downstream.script('/located', { steps: [{ status: 202, location: 'https://crm.example/tasks/77' }] });
    const id = await deliver('located');
    expect((await taskIn(db(), id, 'succeeded')).resultReference).toBe('https://crm.example/tasks/77');
  });
});

describe('answers that never end', () => {
  it('a 2xx whose body never ends: succeeded, and its connection closed rather than read for as long as it streams', async () => {
    downstream.script('/endless', { steps: ['endless-200'] });
    const id = await deliver('endless');
    await taskIn(db(), id, 'succeeded');
    await waitFor(() => downstream.open().every((open) => open.path !== '/endless'), 3000);
    expect(downstream.effects('/endless')).toHaveLength(1);
  });
});

describe('retryable answers', () => {
  it('500, then 502, then success: resent under the key the downstream keeps, same bytes, one effect', async () => {
    downstream.script('/flaky', { steps: [{ status: 500 }, { status: 502 }], honourKey: true });
    const id = await deliver('flaky');
    await taskIn(db(), id, 'succeeded');
    const requests = downstream.requests('/flaky');
    expect(requests.map((r) => r.headers['oncehook-attempt'])).toEqual(['1', '2', '3']);
    expect(new Set(requests.map((r) => r.headers['idempotency-key']))).toEqual(new Set([id]));
    expect(new Set(requests.map((r) => r.body.toString('hex'))).size).toBe(1);
    expect(downstream.effects('/flaky')).toHaveLength(1);
    expect((await ledger(db(), id)).map((r) => [r.number, r.class, r.responseStatus])).toEqual([
      [1, 'unknown', 500],
      [2, 'unknown', 502],
      [3, 'success', 201],
    ]);
  });

  it('500 to an action with neither key nor lookup: the downstream may have acted, so a person decides; sent once', async () => {
    downstream.script('/erring', { steps: [{ status: 500, json: { error: 'mail sent, then the log write failed' } }] });
    const id = await deliver('erring');
    const held = await taskIn(db(), id, 'needs_review');
    expect(held.lastError).toMatch(/no idempotency key and has no lookup/);
    expect(downstream.requests('/erring')).toHaveLength(1);
    expect((await ledger(db(), id)).map((r) => [r.class, r.responseStatus, r.decision])).toEqual([
      ['unknown', 500, 'reconcile: the effect may exist'],
    ]);
  });

  it('429 with Retry-After: waits at least that long, and cools the destination down for other tasks too', async () => {
    cooling.script('/throttled', { steps: [{ status: 429, retryAfter: '1' }] });
    const id = await deliver('throttled');
    await waitFor(() => cooling.requests('/throttled').length === 1);
    // The neighbour arrives once the 429 is recorded: the request reaching the downstream comes before that, and
    // on a loaded machine a neighbour claimed in between was sent before any cool-down existed.
    await waitFor(async () => {
      const [destination] = await db().select().from(destinations).where(eq(destinations.origin, cooling.url));
      return destination?.cooldownUntil != null;
    });
    const neighbour = await deliver('neighbour');
    await taskIn(db(), id, 'succeeded');
    await taskIn(db(), neighbour, 'succeeded');

    const [first, second] = cooling.requests('/throttled');
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(950);
    expect(cooling.requests('/neighbour')[0]!.at - first!.at).toBeGreaterThanOrEqual(950);
    const [row] = await ledger(db(), id);
    expect(row).toMatchObject({ class: 'retryable', responseStatus: 429 });
    expect(row!.decision).toMatch(/Retry-After/);
  });

  it('Retry-After as an HTTP date is honoured, compared with the database clock', async () => {
    // HTTP dates have whole seconds: two seconds ahead is one to two seconds ahead. The wait is measured against
    // the date itself, not against the first request: that may arrive most of the way to a date cut short.
    const date = new Date(Date.now() + 2000).toUTCString();
    downstream.script('/dated', { steps: [{ status: 503, retryAfter: date }] });
    const id = await deliver('dated');
    await taskIn(db(), id, 'succeeded');
    const [first, second] = downstream.requests('/dated');
    const epoch = (at: number) => performance.timeOrigin + at;
    expect(epoch(first!.at)).toBeLessThan(Date.parse(date));
    // The same machine's clocks; a monotonic one read against the wall clock may drift a little in a long run.
    expect(epoch(second!.at)).toBeGreaterThanOrEqual(Date.parse(date) - 100);
  });
});

describe('refusals', () => {
  it('422: failed, sent once, with the answer kept as the error', async () => {
    downstream.script('/invalid', { steps: [{ status: 422, json: { error: 'email is required' } }] });
    const id = await deliver('invalid');
    const failed = await taskIn(db(), id, 'failed');
    expect(failed.lastError).toMatch(/422.*email is required/);
    expect(downstream.requests('/invalid')).toHaveLength(1);
    expect((await ledger(db(), id)).map((r) => r.class)).toEqual(['rejected']);
  });

  it('401: failed, and the destination paused so no other task is sent to it', async () => {
    refusing.script('/unauthorized', { steps: [{ status: 401 }] });
    const id = await deliver('unauthorized');
    await taskIn(db(), id, 'failed');
    const [destination] = await db().select().from(destinations).where(eq(destinations.origin, refusing.url));
    expect(destination!.pausedAt).not.toBeNull();
    expect(destination!.pausedReason).toMatch(/401/);

    const waiting = await deliver('blocked');
    // Absence cannot be awaited: give the worker a NOTIFY and a poll (200 ms in tests) to not send it.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await task(db(), waiting)).state).toBe('pending');
    expect(refusing.requests('/blocked')).toHaveLength(0);
  });
});

describe('failures before the request was written are retried: nothing happened', () => {
  it('a refused connection is retried, and exhausting the attempts fails the task', async () => {
    const id = await deliver('refused');
    const failed = await taskIn(db(), id, 'failed');
    expect(failed.attempts).toBe(2);
    const rows = await ledger(db(), id);
    expect(rows.map((r) => [r.class, r.decision])).toEqual([
      ['not_sent', 'retry with backoff'],
      ['not_sent', 'failed: attempts exhausted'],
    ]);
    expect(rows[0]!.error).toMatch(/ECONNREFUSED/);
  });

  it('a DNS failure is not sent', async () => {
    const id = await deliver('dns');
    await taskIn(db(), id, 'failed');
    expect((await ledger(db(), id)).map((r) => r.class)).toEqual(['not_sent']);
  });

  it('a TLS handshake failure is not sent, and the downstream records nothing', async () => {
    const id = await deliver('tls');
    await taskIn(db(), id, 'failed');
    expect((await ledger(db(), id)).map((r) => r.class)).toEqual(['not_sent']);
    expect(downstream.requests('/tls')).toHaveLength(0);
  });
});

describe('failures after the request was written: the effect may exist', () => {
  it('a hang past the timeout, without key or lookup: needs_review, with exactly one effect', async () => {
    downstream.script('/hang', { steps: ['hang'] });
    const id = await deliver('hang');
    const held = await taskIn(db(), id, 'needs_review');
    expect(held.lastError).toMatch(/no idempotency key and has no lookup/);
    expect(downstream.effects('/hang')).toHaveLength(1);
    expect(downstream.requests('/hang')).toHaveLength(1);
    const [row] = await ledger(db(), id);
    expect(row).toMatchObject({ class: 'unknown', responseStatus: null });
    expect(row!.error).toMatch(/timed out after the request was written/);
  });

  it('a keyed resend that confirms nothing leaves the outcome unknown: past the key retention, review, not a send', async () => {
    // The resend's 503 says nothing of the first attempt. Its Retry-After outlasts the 2.5 s the downstream
    // keeps keys, so a third send would go out under a key it may have forgotten.
    keeping.script('/resent', { steps: ['hang', { status: 503, retryAfter: '3' }] });
    const id = await deliver('resent');
    await waitFor(async () => (await ledger(db(), id)).length === 2 && (await ledger(db(), id))[1]!.finishedAt !== null);
    expect((await task(db(), id)).state).toBe('outcome_unknown');
    const held = await taskIn(db(), id, 'needs_review');
    expect(held.lastError).toMatch(/older than the downstream keeps idempotency keys/);
    expect(keeping.requests('/resent').map((r) => r.headers['idempotency-key'])).toEqual([id, id]);
    expect((await ledger(db(), id)).map((r) => [r.class, r.decision])).toEqual([
      ['unknown', expect.stringMatching(/reconcile/)],
      ['retryable', expect.stringMatching(/resend confirmed nothing/)],
    ]);
  });

  it('a reset after the body was read: needs_review, never a blind resend', async () => {
    downstream.script('/reset', { steps: ['reset-after-read'] });
    const id = await deliver('reset');
    await taskIn(db(), id, 'needs_review');
    expect(downstream.requests('/reset')).toHaveLength(1);
    const [row] = await ledger(db(), id);
    expect(row!.class).toBe('unknown');
    expect(row!.error).toMatch(/after the request was written/);
  });

  it('a lookup that answers 404 confirms the effect is absent: sent again, one effect', async () => {
    downstream.script('/absent', { steps: ['reset-before-read'] });
    const id = await deliver('absent');
    await taskIn(db(), id, 'succeeded');
    expect(downstream.effects('/absent')).toHaveLength(1);
    expect(cooling.requests('/absent').map((r) => [r.method, r.headers['oncehook-task-id']])).toEqual([['GET', id]]);
    expect((await ledger(db(), id)).map((r) => [r.kind, r.class])).toEqual([
      ['send', 'unknown'],
      ['lookup', 'lookup_absent'],
      ['send', 'success'],
    ]);
  });

  it('a lookup that never answers yes or no: asked again, then needs_review', async () => {
    downstream.script('/unanswered', { steps: ['hang'], lookup: [{ status: 500 }, { status: 502 }] });
    const id = await deliver('unanswered');
    const held = await taskIn(db(), id, 'needs_review');
    expect(held.lookups).toBe(2);
    expect(held.lastError).toMatch(/lookup answered neither yes nor no/);
    expect((await ledger(db(), id)).map((r) => [r.kind, r.class])).toEqual([
      ['send', 'unknown'],
      ['lookup', 'lookup_unanswered'],
      ['lookup', 'lookup_unanswered'],
    ]);
    expect(downstream.effects('/unanswered')).toHaveLength(1);
  });
});
