import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, shopifyDelivery } from '../support/deliveries.ts';
import { waitFor } from '../support/forwarding.ts';
import { startHeldTaskRig, type HeldTaskRig } from '../support/held-task.ts';
import { runCli } from '../support/process.ts';

const TOKENS = { alice: 'alice-cli-token', bob: 'bob-cli-token' };
let rig: HeldTaskRig;
let held: string;
let delivered: string;

/** The real binary, pointed at the running gateway through the environment, as an operator would. */
const oncehook = (...args: string[]) => runCli(args, { ONCEHOOK_URL: rig.gateway.url, ONCEHOOK_ADMIN_TOKEN: TOKENS.alice });
const json = async (...args: string[]) => {
  const result = await oncehook(...args, '--json');
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout);
};

// Setup and waiting go over HTTP: each run of the binary costs a second of start-up.
const api = (path: string) => fetch(`${rig.gateway.url}${path}`, { headers: { authorization: `Bearer ${TOKENS.bob}` } }).then((r) => r.json());

beforeAll(async () => {
  rig = await startHeldTaskRig(TOKENS);
  const answer = await post(rig.gateway.url, 'shop', shopifyDelivery({ eventId: 'cli-1', topic: 'orders/hang', webhookId: 'cli-hook-1' }));
  held = answer.json.tasks[0].id;
  await post(rig.gateway.url, 'shop', shopifyDelivery({ eventId: 'cli-1', topic: 'orders/hang', webhookId: 'cli-hook-2' }));
  await waitFor(async () => (await api('/api/tasks?state=needs_review')).items.length === 1, 30_000);
  delivered = (await api('/api/deliveries?deliveryId=cli-hook-2')).items[0].id;
});
afterAll(async () => {
  await rig?.close();
});

describe('oncehook admin commands against a running server', () => {
  it('lists tasks and deliveries as tables for people and as JSON for scripts', async () => {
    const [tasks, deliveries, page] = await Promise.all([
      oncehook('tasks', '--attention'),
      json('deliveries', '--event-id', 'cli-1', '--order', 'asc'),
      json('deliveries', '--limit', '1'),
    ]);
    expect(tasks.code).toBe(0);
    expect(tasks.stdout).toMatch(/^ID\s+STATE\s+ACTION/);
    expect(tasks.stdout).toContain(`${held}  needs_review  shop/hang`);

    expect(deliveries.items.map((d: { decision: string }) => d.decision)).toEqual(['accepted', 'duplicate_event']);
    expect(page).toMatchObject({ hasMore: true, nextCursor: expect.any(String) });
    const next = await json('deliveries', '--limit', '1', '--cursor', page.nextCursor);
    expect(next.items[0].id).not.toBe(page.items[0].id);
  });

  it('explains a duplicate in words, and shows a task with what a person must decide', async () => {
    const [explain, show] = await Promise.all([oncehook('explain', delivered), oncehook('show', held)]);
    expect(explain.stdout).toMatch(/^duplicate_event — event cli-1 first arrived in delivery d_\w+ \(shop delivery ID cli-hook-1\)/);
    expect(show.stdout).toMatch(/^needs_review — shop\/hang for event cli-1/);
    expect(show.stdout).toMatch(/next: Find out whether hang already made the effect/);
    expect(show.stdout).toMatch(/send #1\s+\S+\s+—\s+unknown/);
  });

  it('resolves with a note under the token label, then refuses a second decision with exit code 1', async () => {
    const resolved = await json('resolve', held, '--reference', 'eff_1', '--note', 'found it in the downstream log');
    expect(resolved).toMatchObject({ state: 'succeeded', resultReference: 'eff_1' });
    expect(resolved.operatorActions).toMatchObject([{ kind: 'resolve', actor: 'alice', note: 'found it in the downstream log' }]);

    const again = await oncehook('retry', held, '--note', 'again');
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/is succeeded; retry is allowed only from outcome_unknown, needs_review, failed/);
    const missing = await oncehook('cancel', 't_nope', '--note', 'x', '--json');
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stdout).error.message).toBe('no task t_nope');
  });

  it('replays in bulk after a dry run that counts first', async () => {
    const dry = await json('replay', '--state', 'succeeded', '--action', 'hang', '--note', 'resend', '--dry-run');
    expect(dry).toEqual({ dryRun: true, kind: 'replay', count: 1, skippedBodyPurged: 0, skippedByReplay: 0, skippedTransformFailed: 0 });
    const done = await json('replay', '--state', 'succeeded', '--action', 'hang', '--note', 'resend');
    expect(done.count).toBe(1);
    expect((await json('show', done.tasks[0])).replayOf).toBe(held);
  });

  it('prints stats and destinations', async () => {
    const [stats, destinations] = await Promise.all([oncehook('stats'), json('destinations')]);
    expect(stats.stdout).toMatch(/^events\s+1$/m);
    expect(stats.stdout).toMatch(/duplicate_event\s+1/);
    expect(stats.stdout).toMatch(/^confirmed effects\s+1$/m);
    expect(destinations.items[0]).toMatchObject({ origin: rig.downstream.url, status: 'open' });
  });

  it('exits 2 for a wrong token, an unreachable server and a usage error, saying which', async () => {
    const [wrong, down, usage, bad] = await Promise.all([
      runCli(['tasks'], { ONCEHOOK_URL: rig.gateway.url, ONCEHOOK_ADMIN_TOKEN: 'wrong' }),
      runCli(['stats', '--url', 'http://127.0.0.1:9', '--token', 'x']),
      oncehook('resolve', held, '--note', 'no reference'),
      oncehook('tasks', '--state', 'done'),
    ]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/token was refused/);
    expect(down.code).toBe(2);
    expect(down.stderr).toMatch(/cannot reach oncehook at http:\/\/127\.0\.0\.1:9/);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--reference/);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/done: no such state; the states are awaiting_approval, /);
  });

  // After the stats: this one adds an event and effects of its own.
  it('replays one task only after the replay it names, refusing a stale one in one line with exit code 1', async () => {
    const answer = await post(rig.gateway.url, 'shop', shopifyDelivery({ eventId: 'cli-after', topic: 'orders/create', webhookId: 'cli-after-1' }));
    const task = answer.json.tasks.find((t: { action: string }) => t.action === 'ok').id;
    const settled = (id: string) => waitFor(async () => (await api(`/api/tasks/${id}`)).state === 'succeeded', 30_000);
    await settled(task);

    const first = await json('replay', task, '--after', 'none', '--note', 'the CRM lost it');
    expect(first).toMatchObject({ replayOf: task, state: expect.any(String) });
    // The same command sent twice: the second saw no replay, and there is one now.
    const twice = await oncehook('replay', task, '--after', 'none', '--note', 'the CRM lost it');
    expect(twice.code).toBe(1);
    expect(twice.stdout).toBe('');
    expect(twice.stderr).toMatch(new RegExp(`^oncehook: task ${task} was replayed as ${first.id} after the view [^\n]*\n$`));
    const stale = await oncehook('replay', task, '--after', 't_not_the_latest', '--note', 'again', '--json');
    expect(stale.code).toBe(1);
    expect(JSON.parse(stale.stdout).error.code).toBe('replay_stale');

    await settled(first.id);
    const second = await json('replay', task, '--after', first.id, '--note', 'once more, on purpose');
    expect(second.replayOf).toBe(task);
    expect((await api(`/api/tasks/${task}`)).replays.map((r: { id: string }) => r.id)).toEqual([first.id, second.id]);

    const bulk = await oncehook('replay', '--state', 'succeeded', '--after', first.id, '--note', 'x');
    expect(bulk.code).toBe(2);
    expect(bulk.stderr).toMatch(/--after guards the replay of one task/);
  });

  it('shows the body a delivery carried, finds it by content, and counts refused requests', async () => {
    const body = JSON.stringify({ id: 424242, email: 'cli@example.com' });
    const sent = await post(rig.gateway.url, 'shop', shopifyDelivery({ eventId: 'cli-body', topic: 'orders/none', body }));
    const forged = await post(rig.gateway.url, 'shop', shopifyDelivery({ eventId: 'cli-forged', body, secret: 'not-the-secret' }));
    expect(forged.status).toBe(401);
    const [show, found] = await Promise.all([oncehook('show', sent.json.receipt), json('deliveries', '--match', '{"body":{"id":424242}}')]);
    expect(show.stdout).toContain(`received:\n${body}`);
    expect(found.items.map((d: { id: string }) => d.id)).toEqual([sent.json.receipt]);
    // The gateway adds its counts every few seconds.
    await waitFor(async () => (await api('/api/rejections')).items.length > 0, 30_000);
    const refused = await oncehook('rejections', '--source', 'shop');
    expect(refused.stdout).toMatch(/shop +invalid_signature +1 /);
    expect(refused.stdout).toContain('x-shopify-hmac-sha256');
  });
});
