import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { adminApi, ALL_TOKENS, followPages, PEOPLE, setState, signedInDashboard } from '../support/admin.ts';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { engine, holdTransaction } from '../support/engine.ts';
import { rows } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';

let gateway: TestGateway;
let api: ReturnType<typeof adminApi>;

beforeAll(async () => {
  // Web role: nothing forwards, so each task stays in the state the test puts it in.
  gateway = await startTestGateway(
    shopConfig({ crm: { url: 'http://127.0.0.1:9/crm', idempotency: 'key' }, mail: { url: 'http://127.0.0.1:9/mail' } }),
    { role: 'web', adminToken: ALL_TOKENS },
  );
  api = adminApi(gateway.url);
});
afterAll(async () => {
  await gateway?.close();
});

let events = 0;
/** A new event: returns its tasks by action. */
async function newTasks(): Promise<{ crm: string; mail: string }> {
  const answer = await post(gateway.url, 'shop', shopifyDelivery({ eventId: `tasks-${++events}-${Math.random()}` }));
  const byAction = Object.fromEntries(answer.json.tasks.map((t: { id: string; action: string }) => [t.action, t.id]));
  return { crm: byAction.crm, mail: byAction.mail };
}

const decide = (id: string, kind: string, body: object, token?: string) => api(`/api/tasks/${id}/${kind}`, { body, token });

/** A replay of `id`, put in `state` as if forwarding had taken it that far; a replay keeps its original's source. */
async function replayOf(id: string, state: string): Promise<string> {
  const replay = (await decide(id, 'replay', { note: 'resend' })).json.id as string;
  await setState(gateway.store.db, replay, state);
  return replay;
}

describe('GET /api/tasks', () => {
  it('answers 401 without a token and with a wrong one, saying which', async () => {
    const none = await api('/api/tasks', { token: null });
    expect(none.status).toBe(401);
    expect(none.json.error).toEqual({ code: 'unauthorized', message: 'the admin API needs "Authorization: Bearer $ONCEHOOK_ADMIN_TOKEN"' });
    const wrong = await api('/api/tasks', { token: 'nope' });
    expect(wrong.status).toBe(401);
    expect(wrong.json.error).toEqual({ code: 'token_refused', message: "the bearer token was refused: it matches none of this gateway's admin tokens" });
    expect(wrong.headers.get('www-authenticate')).toBe('Bearer realm="oncehook", error="invalid_token"');
    // Nothing of the right tokens shows: one a character off is answered in the same words.
    expect((await api('/api/tasks', { token: `${PEOPLE.alice}x` })).json).toEqual(wrong.json);
  });

  it('filters by state, source and action, with a cursor', async () => {
    const { crm, mail } = await newTasks();
    await setState(gateway.store.db, crm, 'needs_review');
    const review = await api('/api/tasks?state=needs_review&action=crm&source=shop');
    expect(review.status).toBe(200);
    expect(review.json.items.map((t: { id: string }) => t.id)).toContain(crm);
    expect(review.json.items.every((t: { state: string }) => t.state === 'needs_review')).toBe(true);
    const either = await api('/api/tasks?state=needs_review,pending&action=mail');
    expect(either.json.items.map((t: { id: string }) => t.id)).toContain(mail);

    const seen: string[] = [];
    let cursor = '';
    for (;;) {
      const page = await api(`/api/tasks?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...page.json.items.map((t: { id: string }) => t.id));
      if (!page.json.hasMore) break;
      cursor = page.json.nextCursor;
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(expect.arrayContaining([crm, mail]));
  });

  // Needs a second session holding a transaction open: a server, not the single-session embedded PGlite.
  if (engine() === 'postgres') it('does not skip a task whose transaction began first but committed last', async () => {
    const before = (await followPages(api, '/api/tasks?limit=100&order=asc')).cursor;
    const held = `t_late_${Math.random().toString(16).slice(2)}`;
    const late = await holdTransaction(
      gateway.database.url!,
      (tx) => tx`insert into tasks (id, source, action, event_id, delivery_id, state, body_sha256)
                 values (${held}, 'shop', 'crm', ${held}, ${held}, 'cancelled', 'x')`,
    );
    try {
      const later = [await newTasks(), await newTasks()].flatMap((tasks) => [tasks.crm, tasks.mail]);
      const whileOpen = await followPages(api, '/api/tasks?limit=2&order=asc', before);
      await late.commit();
      const after = await followPages(api, '/api/tasks?limit=2&order=asc', whileOpen.cursor);

      const seen = [...whileOpen.seen, ...after.seen];
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen.slice().sort()).toEqual([held, ...later].sort());
    } finally {
      await late.end();
    }
  });

  it('answers 400 naming the parameter for bad input', async () => {
    const badState = await api('/api/tasks?state=done');
    expect(badState.status).toBe(400);
    expect(badState.json.error.message).toMatch(/^state/);
    expect((await api('/api/tasks?state=failed,')).status).toBe(200);
    const noState = await api('/api/tasks?state=,');
    expect(noState.status).toBe(400);
    expect(noState.json.error.message).toBe('state: names no state: give one or several, comma-separated');
    expect((await api('/api/tasks?limit=0')).json.error.message).toBe('limit: must be a whole number of rows from 1 to 500');
    expect((await api('/api/tasks?limit=abc')).json.error.message).toBe('limit: must be a whole number of rows from 1 to 500');
    // The API stays strict, unlike the dashboard: a misspelt filter would widen what a script lists or decides.
    expect((await api('/api/tasks?stat=failed')).json.error.message).toBe('(query): Unrecognized key: "stat"');
    const cursor = await api('/api/tasks?cursor=garbage');
    expect(cursor.status).toBe(400);
    expect(cursor.json.error.message).toMatch(/cursor/);
  });
});

describe('GET /api/tasks/{id}', () => {
  it('explains the task and names the next decision a person must make', async () => {
    const { crm } = await newTasks();
    await setState(gateway.store.db, crm, 'needs_review');
    const view = await api(`/api/tasks/${crm}`);
    expect(view.json).toMatchObject({
      id: crm,
      state: 'needs_review',
      owner: null,
      allowedActions: ['resolve', 'retry', 'cancel'],
      summary: expect.stringMatching(/^needs_review — shop\/crm/),
      nextDecision: expect.stringMatching(/resolve with its reference; if it did not, retry/),
    });
    expect((await api('/api/tasks/t_nope')).status).toBe(404);
    expect((await api(`/api/tasks/${crm}`, { token: null })).status).toBe(401);
  });
});

/** What retention does to a finished task's body. */
const purgeBody = (id: string) => gateway.store.db.execute(sql`update tasks set body = null where id = ${id}`);

describe('a task whose body retention purged', () => {
  // Offering retry or replay here only led to a 409 body_purged.
  it('says so, and offers only the decisions that need no body, on the API and the dashboard', async () => {
    const { crm, mail } = await newTasks();
    await setState(gateway.store.db, crm, 'failed');
    await setState(gateway.store.db, mail, 'succeeded');
    await Promise.all([purgeBody(crm), purgeBody(mail)]);
    const failed = await api(`/api/tasks/${crm}`);
    expect(failed.json).toMatchObject({
      bodyPurged: true,
      allowedActions: ['resolve', 'cancel'],
      summary: expect.stringMatching(/body purged by retention/),
      nextDecision: expect.stringMatching(/^It was not done — .*\. Its body was purged by retention, so it cannot be sent again: resolve if it was done by hand, or cancel\./),
    });
    expect(failed.json.nextDecision).not.toMatch(/retry/);
    expect((await api(`/api/tasks/${mail}`)).json).toMatchObject({ bodyPurged: true, allowedActions: [], nextDecision: null });
    const listed = await api(`/api/tasks?state=failed&action=crm`);
    expect(listed.json.items.find((t: { id: string }) => t.id === crm)).toMatchObject({ bodyPurged: true });

    const dashboard = signedInDashboard(gateway.url);
    const page = await dashboard(`/ui/tasks/${crm}`);
    expect(page).toContain('purged by retention');
    expect(page).toContain(`action="/ui/tasks/${crm}/resolve"`);
    expect(page).not.toContain(`action="/ui/tasks/${crm}/retry"`);
    expect(page).not.toContain(`action="/ui/tasks/${crm}/replay"`);
    const queue = await dashboard('/ui/attention?state=failed');
    expect(queue).toContain(`formaction="/ui/tasks/${crm}/cancel"`);
    expect(queue).not.toContain(`formaction="/ui/tasks/${crm}/retry"`);
  });

  it('keeps bodyPurged false while the body is there', async () => {
    const { crm } = await newTasks();
    await setState(gateway.store.db, crm, 'failed');
    expect((await api(`/api/tasks/${crm}`)).json).toMatchObject({ bodyPurged: false, allowedActions: ['resolve', 'retry', 'cancel', 'replay'] });
  });
});

describe('operator actions', () => {
  it('resolve: needs a reference and a note, records the token label, then refuses a second time with 409', async () => {
    const { crm } = await newTasks();
    await setState(gateway.store.db, crm, 'needs_review');
    const missing = await decide(crm, 'resolve', { note: 'found it' });
    expect(missing.status).toBe(400);
    expect(missing.json.error.message).toMatch(/^reference/);
    expect((await decide(crm, 'resolve', { reference: 'R-1', note: ' ' })).json.error.message).toMatch(/note/);
    expect((await api(`/api/tasks/${crm}/resolve`, { body: '{not json' })).json.error.code).toBe('invalid_json');

    const resolved = await decide(crm, 'resolve', { reference: 'CRM-42', note: 'found it in the CRM' }, PEOPLE.alice);
    expect(resolved.status).toBe(200);
    expect(resolved.json).toMatchObject({ state: 'succeeded', resultReference: 'CRM-42', nextDecision: null });
    expect(resolved.json.operatorActions).toMatchObject([
      { kind: 'resolve', actor: 'alice', note: 'found it in the CRM', detail: { from: 'needs_review', reference: 'CRM-42' } },
    ]);

    const again = await decide(crm, 'resolve', { reference: 'CRM-43', note: 'twice' });
    expect(again.status).toBe(409);
    expect(again.json.error.message).toBe(
      `task ${crm} is succeeded; resolve is allowed only from awaiting_approval, pending, outcome_unknown, needs_review, failed`,
    );
  });

  it('retry: from needs_review, failed or outcome_unknown to pending; never from in_progress', async () => {
    const { crm, mail } = await newTasks();
    await setState(gateway.store.db, crm, 'failed');
    const retried = await decide(crm, 'retry', { note: 'the CRM is back' }, PEOPLE.bob);
    expect(retried.json).toMatchObject({ state: 'pending', lastError: null });
    expect(retried.json.operatorActions.at(-1)).toMatchObject({ kind: 'retry', actor: 'bob', detail: { from: 'failed' } });

    await setState(gateway.store.db, mail, 'in_progress');
    const busy = await decide(mail, 'retry', { note: 'now' });
    expect(busy.status).toBe(409);
    expect(busy.json.error.message).toMatch(/is in_progress; retry is allowed only from outcome_unknown, needs_review, failed/);
    expect((await decide('t_nope', 'retry', { note: 'x' })).status).toBe(404);
  });

  it('retry and replay refuse a task whose body was purged, saying so', async () => {
    const { crm } = await newTasks();
    await setState(gateway.store.db, crm, 'failed');
    await purgeBody(crm);
    const retry = await decide(crm, 'retry', { note: 'again' });
    expect(retry.status).toBe(409);
    expect(retry.json.error).toMatchObject({ code: 'body_purged', message: expect.stringMatching(/purged/) });
    expect((await decide(crm, 'replay', { note: 'again' })).json.error.code).toBe('body_purged');
  });

  it('cancel: from anything unsettled; a cancelled task cannot be cancelled or retried', async () => {
    const { crm } = await newTasks();
    const cancelled = await decide(crm, 'cancel', { note: 'customer withdrew' });
    expect(cancelled.json).toMatchObject({ state: 'cancelled', allowedActions: ['replay'] });
    expect((await decide(crm, 'cancel', { note: 'again' })).status).toBe(409);
    expect((await decide(crm, 'retry', { note: 'again' })).status).toBe(409);
  });

  it('replay: a new task with a new ID and the same bytes, linked both ways; only from a settled state', async () => {
    const { crm } = await newTasks();
    expect((await decide(crm, 'replay', { note: 'early' })).status).toBe(409);
    await setState(gateway.store.db, crm, 'succeeded');
    const replay = await decide(crm, 'replay', { note: 'the customer asked for a second copy' }, PEOPLE.alice);
    expect(replay.status).toBe(201);
    expect(replay.json).toMatchObject({ state: 'pending', replayOf: crm, attempts: 0 });
    expect(replay.json.id).toMatch(/^t_[0-9a-f]{32}$/);
    expect(replay.json.id).not.toBe(crm);
    expect(replay.headers.get('location')).toBe(`/api/tasks/${replay.json.id}`);
    const original = await api(`/api/tasks/${crm}`);
    expect(replay.json.bodySha256).toBe(original.json.bodySha256);
    expect(original.json.replays).toMatchObject([{ id: replay.json.id }]);
    expect(original.json.operatorActions.at(-1)).toMatchObject({ kind: 'replay', actor: 'alice', detail: { replay: replay.json.id, from: 'succeeded' } });
    expect(replay.json.operatorActions).toMatchObject([{ kind: 'replay', detail: { replayOf: crm } }]);
    const [bytes] = await rows<{ same: boolean }>(
      gateway.store.db,
      sql`select (select body from tasks where id = ${crm}) = (select body from tasks where id = ${replay.json.id}) as same`,
    );
    expect(bytes!.same).toBe(true);
  });

  it('replay: several at once make one; another is refused until that one has finished', async () => {
    const { crm } = await newTasks();
    await setState(gateway.store.db, crm, 'succeeded');
    // On PostgreSQL each replay's insert is held 200 ms, so the requests overlap inside each other's
    // transactions (PGlite runs one transaction at a time anyway).
    const db = gateway.store.db;
    if (engine() === 'postgres') {
      await db.execute(sql`create function slow_replay() returns trigger language plpgsql as $$ begin perform pg_sleep(0.2); return new; end $$`);
      await db.execute(sql`create trigger slow_replay before insert on tasks for each row when (new.replay_of is not null) execute function slow_replay()`);
    }
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => decide(crm, 'replay', { note: `click ${i}` }, i % 2 ? PEOPLE.alice : PEOPLE.bob)),
    ).finally(async () => {
      if (engine() === 'postgres') await db.execute(sql`drop function slow_replay() cascade`);
    });
    const made = answers.filter((a) => a.status === 201);
    expect(made).toHaveLength(1);
    const replay = made[0]!.json.id as string;
    for (const refused of answers.filter((a) => a.status !== 201)) {
      expect(refused.status).toBe(409);
      expect(refused.json.error).toMatchObject({ code: 'replay_unsettled', message: expect.stringContaining(replay) });
    }
    expect((await api(`/api/tasks/${crm}`)).json.replays).toHaveLength(1);

    await setState(gateway.store.db, replay, 'succeeded');
    expect((await decide(crm, 'replay', { note: 'a third copy, on purpose' })).status).toBe(201);
  });

  it('replay with "after": refused once the task has a replay the caller did not see, finished or not', async () => {
    const db = gateway.store.db;
    const { crm } = await newTasks();
    await setState(db, crm, 'succeeded');
    const first = await decide(crm, 'replay', { note: 'once', after: null });
    expect(first.status).toBe(201);
    // Finished: the rule about unsettled replays no longer stops a second one. The same click again must not make it.
    await setState(db, first.json.id, 'succeeded');
    const again = await decide(crm, 'replay', { note: 'the same click, 150 ms later', after: null });
    expect(again.status).toBe(409);
    expect(again.json.error).toEqual({
      code: 'replay_stale',
      message: `task ${crm} was replayed as ${first.json.id} after the view this replay was asked from (which saw no replay); look at ${first.json.id} first, and replay again only if one more effect is wanted`,
    });
    expect((await decide(crm, 'replay', { note: 'x', after: 't_not_its_replay' })).json.error.code).toBe('replay_stale');

    // Having seen it, a person may decide on one more; then that one is the latest.
    const second = await decide(crm, 'replay', { note: 'one more, on purpose', after: first.json.id });
    expect(second.status).toBe(201);
    await setState(db, second.json.id, 'succeeded');
    expect((await api(`/api/tasks/${crm}`)).json.replays.map((r: { id: string }) => r.id)).toEqual([first.json.id, second.json.id]);
    expect((await decide(crm, 'replay', { note: 'x', after: first.json.id })).json.error.message).toContain(`replayed as ${second.json.id}`);

    const { crm: never } = await newTasks();
    await setState(db, never, 'succeeded');
    const named = await decide(never, 'replay', { note: 'x', after: first.json.id });
    expect(named.json.error).toMatchObject({ code: 'replay_stale', message: expect.stringMatching(/has no replay/) });
    expect((await decide(never, 'replay', { note: 'x', after: 7 })).status).toBe(400);
    // Without "after", as before: only an unsettled replay refuses.
    expect((await decide(crm, 'replay', { note: 'no guard' })).status).toBe(201);
  });

  it('assign: names an owner on a task that needs a person, and unassigns', async () => {
    const { crm } = await newTasks();
    await setState(gateway.store.db, crm, 'needs_review');
    const mine = await decide(crm, 'assign', { owner: 'alice' }, PEOPLE.alice);
    expect(mine.json).toMatchObject({ owner: 'alice', nextDecision: expect.stringMatching(/alice has it/) });
    expect((await api(`/api/tasks?owner=alice&state=needs_review`)).json.items.map((t: { id: string }) => t.id)).toContain(crm);
    expect((await decide(crm, 'assign', { owner: null })).json.owner).toBeNull();
    expect((await decide(crm, 'assign', { owner: 7 })).status).toBe(400);
    await setState(gateway.store.db, crm, 'succeeded');
    expect((await decide(crm, 'assign', { owner: 'bob' })).status).toBe(409);
  });
});

describe('bulk retry and replay', () => {
  it('a dry run counts exactly what the write then changes', async () => {
    const made = await Promise.all([newTasks(), newTasks(), newTasks()]);
    const source = `bulk-${Math.random()}`;
    for (const { crm, mail } of made) {
      await setState(gateway.store.db, crm, 'failed');
      await setState(gateway.store.db, mail, 'succeeded');
      // A source of their own so other tests' tasks do not count.
      await gateway.store.db.execute(sql`update tasks set source = ${source} where id in (${crm}, ${mail})`);
    }
    const dry = await api('/api/tasks/bulk/retry', { body: { source, note: 'the CRM is fixed', dryRun: true } });
    expect(dry.json).toEqual({ dryRun: true, kind: 'retry', count: 3, skippedBodyPurged: 0, skippedByReplay: 0, skippedTransformFailed: 0, transformAgain: 0 });
    const stillFailed = await api(`/api/tasks?source=${source}&state=failed`);
    expect(stillFailed.json.items).toHaveLength(3);

    const done = await api('/api/tasks/bulk/retry', { body: { source, note: 'the CRM is fixed' } });
    expect(done.json).toMatchObject({ dryRun: false, count: 3 });
    expect(new Set(done.json.tasks)).toEqual(new Set(made.map((m) => m.crm)));

    // A replay by source alone would send every succeeded task again.
    const unnamed = await api('/api/tasks/bulk/replay', { body: { source, note: 'resend all', dryRun: true } });
    expect(unnamed.status).toBe(400);
    expect(unnamed.json.error.message).toMatch(/^state: a bulk replay needs it/);
    const replays = await api('/api/tasks/bulk/replay', { body: { source, state: 'succeeded', note: 'resend all', dryRun: true } });
    expect(replays.json.count).toBe(3);
    const replayed = await api('/api/tasks/bulk/replay', { body: { source, state: 'succeeded', note: 'resend all' } });
    expect(replayed.json.count).toBe(3);
    const view = await api(`/api/tasks/${replayed.json.tasks[0]}`);
    expect(view.json).toMatchObject({ state: 'pending', replayOf: expect.stringMatching(/^t_/), operatorActions: [{ detail: { bulk: true } }] });
    // Their replays are still pending: replaying them again would make a third effect each.
    const again = { source, state: 'succeeded', note: 'again' };
    expect((await api('/api/tasks/bulk/replay', { body: { ...again, dryRun: true } })).json).toMatchObject({ count: 0, skippedByReplay: 3 });
    expect((await api('/api/tasks/bulk/replay', { body: again })).json).toMatchObject({ count: 0, skippedByReplay: 3 });
  });

  it('a bulk replay passes over tasks with a replay still on its way, and says how many, not the ones it replays', async () => {
    const made = await Promise.all([newTasks(), newTasks(), newTasks(), newTasks()]);
    const source = `bulk-unsettled-${Math.random()}`;
    for (const { crm } of made) {
      await setState(gateway.store.db, crm, 'failed');
      await gateway.store.db.execute(sql`update tasks set source = ${source} where id = ${crm}`);
    }
    const unsettled = (await decide(made[0]!.crm, 'replay', { note: 'resend' })).json.id as string;
    await setState(gateway.store.db, unsettled, 'outcome_unknown');
    const filter = { source, state: 'failed', note: 'the CRM is back' };
    const dry = await api('/api/tasks/bulk/replay', { body: { ...filter, dryRun: true } });
    expect(dry.json).toEqual({ dryRun: true, kind: 'replay', count: 3, skippedBodyPurged: 0, skippedByReplay: 1, skippedTransformFailed: 0 });
    // The three replays it makes are on their way too once it answers: the count is of the task it passed over.
    const replayed = await api('/api/tasks/bulk/replay', { body: filter });
    expect(replayed.json).toMatchObject({ dryRun: false, kind: 'replay', count: 3, skippedBodyPurged: 0, skippedByReplay: 1 });
  });

  it('says how many tasks it skipped because retention purged their body', async () => {
    const made = await Promise.all([newTasks(), newTasks()]);
    const source = `bulk-purged-${Math.random()}`;
    for (const { crm, mail } of made) {
      await setState(gateway.store.db, crm, 'failed');
      await setState(gateway.store.db, mail, 'succeeded');
      await gateway.store.db.execute(sql`update tasks set source = ${source} where id in (${crm}, ${mail})`);
    }
    await Promise.all([purgeBody(made[0]!.crm), purgeBody(made[0]!.mail), purgeBody(made[1]!.mail)]);
    const dry = await api('/api/tasks/bulk/retry', { body: { source, state: 'failed', note: 'the CRM is fixed', dryRun: true } });
    expect(dry.json).toEqual({ dryRun: true, kind: 'retry', count: 1, skippedBodyPurged: 1, skippedByReplay: 0, skippedTransformFailed: 0, transformAgain: 0 });
    const retried = await api('/api/tasks/bulk/retry', { body: { source, state: 'failed', note: 'the CRM is fixed' } });
    expect(retried.json).toEqual({
      dryRun: false,
      kind: 'retry',
      count: 1,
      tasks: [made[1]!.crm],
      skippedBodyPurged: 1,
      skippedByReplay: 0,
      skippedTransformFailed: 0,
      transformAgain: 0,
      transformErrors: [],
    });
    const replayed = await api('/api/tasks/bulk/replay', { body: { source, state: 'succeeded', note: 'resend' } });
    expect(replayed.json).toMatchObject({ count: 0, tasks: [], skippedBodyPurged: 2 });
  });

  it('a bulk retry passes over failed tasks whose effect a replay made or is on its way to, and says how many', async () => {
    const made = await Promise.all([newTasks(), newTasks(), newTasks(), newTasks()]);
    const source = `bulk-replayed-${Math.random()}`;
    for (const { crm, mail } of made) {
      await setState(gateway.store.db, crm, 'failed');
      await setState(gateway.store.db, mail, 'succeeded');
      await gateway.store.db.execute(sql`update tasks set source = ${source} where id in (${crm}, ${mail})`);
    }
    // The first was replayed and its replay succeeded; the second's replay failed and a replay of that replay
    // succeeded; the third's replay failed.
    await replayOf(made[0]!.crm, 'succeeded');
    await replayOf(await replayOf(made[1]!.crm, 'failed'), 'succeeded');
    const undone = await replayOf(made[2]!.crm, 'failed');
    // The fourth's replay has not settled: it may still make the effect.
    await replayOf(made[3]!.crm, 'needs_review');
    // The failed replay in the second chain was done by its own replay. The third chain's two are two tries at one
    // effect: only its newest, the replay, is retried.
    const filter = { source, state: 'failed', action: 'crm', note: 'the CRM is fixed' };
    const dry = await api('/api/tasks/bulk/retry', { body: { ...filter, dryRun: true } });
    expect(dry.json).toMatchObject({ count: 1, skippedByReplay: 5 });
    const retried = await api('/api/tasks/bulk/retry', { body: filter });
    expect(retried.json).toMatchObject({ count: 1, skippedByReplay: 5 });
    expect(retried.json.tasks).toEqual([undone]);
  });

  it('a replay still on its way further down the chain holds the task back from a bulk retry, a bulk replay and a replay', async () => {
    const { crm } = await newTasks();
    const source = `bulk-chain-${Math.random()}`;
    await setState(gateway.store.db, crm, 'failed');
    await gateway.store.db.execute(sql`update tasks set source = ${source} where id = ${crm}`);
    // The task's replay failed, and a replay of that replay has not finished: it may still make the effect.
    const failedReplay = await replayOf(crm, 'failed');
    const running = await replayOf(failedReplay, 'in_progress');
    const filter = { source, state: 'failed', note: 'the CRM is fixed' };
    const retried = await api('/api/tasks/bulk/retry', { body: filter });
    expect(retried.json).toMatchObject({ count: 0, tasks: [], skippedByReplay: 2 });
    const replayed = await api('/api/tasks/bulk/replay', { body: { ...filter, note: 'once more' } });
    expect(replayed.json).toMatchObject({ count: 0, tasks: [], skippedByReplay: 2 });
    const refused = await decide(crm, 'replay', { note: 'once more' });
    expect(refused.status).toBe(409);
    expect(refused.json.error).toMatchObject({ code: 'replay_unsettled', message: expect.stringContaining(running) });
    expect((await api(`/api/tasks/${crm}`)).json.state).toBe('failed');

    // Once the running one has failed too, nothing is on its way: the chain's newest, that one, may be retried.
    await setState(gateway.store.db, running, 'failed');
    const after = await api('/api/tasks/bulk/retry', { body: { ...filter, dryRun: true } });
    expect(after.json).toMatchObject({ count: 1, skippedByReplay: 2 });
  });

  it('a replay on its way holds back its whole replay tree, siblings too, and replays in one tree wait for each other', async () => {
    const { crm } = await newTasks();
    const source = `bulk-tree-${Math.random()}`;
    await setState(gateway.store.db, crm, 'failed');
    await gateway.store.db.execute(sql`update tasks set source = ${source} where id = ${crm}`);
    // Two replays of the original: the first failed, the second is still on its way.
    const failed = await replayOf(crm, 'failed');
    const running = await replayOf(crm, 'needs_review');
    const filter = { source, state: 'failed', note: 'the CRM is fixed' };
    expect((await api('/api/tasks/bulk/retry', { body: { ...filter, dryRun: true } })).json).toMatchObject({ count: 0, skippedByReplay: 2 });
    expect((await api('/api/tasks/bulk/replay', { body: { ...filter, dryRun: true } })).json).toMatchObject({ count: 0, skippedByReplay: 2 });
    const sibling = await decide(failed, 'replay', { note: 'once more' });
    expect(sibling.status).toBe(409);
    expect(sibling.json.error).toMatchObject({ code: 'replay_unsettled', message: expect.stringContaining(running) });
    // The running one itself is only held back by others: a person may still retry it in bulk.
    expect((await api('/api/tasks/bulk/retry', { body: { source, state: 'needs_review', note: 'x', dryRun: true } })).json).toMatchObject({ count: 1 });

    // Once it has failed too, replays of the original and of its failed replay, asked at once, make one.
    await setState(gateway.store.db, running, 'failed');
    const db = gateway.store.db;
    if (engine() === 'postgres') {
      await db.execute(sql`create function slow_tree_replay() returns trigger language plpgsql as $$ begin perform pg_sleep(0.2); return new; end $$`);
      await db.execute(sql`create trigger slow_tree_replay before insert on tasks for each row when (new.replay_of is not null) execute function slow_tree_replay()`);
    }
    const answers = await Promise.all([crm, failed, running, crm, failed].map((id) => decide(id, 'replay', { note: 'after the outage' }))).finally(async () => {
      if (engine() === 'postgres') await db.execute(sql`drop function slow_tree_replay() cascade`);
    });
    expect(answers.map((a) => a.status).filter((status) => status === 201)).toHaveLength(1);
    for (const refused of answers.filter((a) => a.status !== 201)) expect(refused.json.error.code).toBe('replay_unsettled');
  });

  it('a bulk decision takes one task of each replay tree, its newest: the original and its failed replays are tries at one effect', async () => {
    const trees = await Promise.all([newTasks(), newTasks()]);
    const source = `bulk-newest-${Math.random()}`;
    const fail = async (id: string) => {
      await setState(gateway.store.db, id, 'failed');
      await gateway.store.db.execute(sql`update tasks set source = ${source} where id = ${id}`);
    };
    // One tree: the original, then two replays of it, each failed. The other: an original never replayed.
    await fail(trees[0]!.crm);
    await replayOf(trees[0]!.crm, 'failed');
    const newest = await replayOf(trees[0]!.crm, 'failed');
    await fail(trees[1]!.crm);
    const filter = { source, state: 'failed', action: 'crm', note: 'the CRM is fixed' };
    const replay = await api('/api/tasks/bulk/replay', { body: { ...filter, dryRun: true } });
    expect(replay.json).toMatchObject({ count: 2, skippedByReplay: 2 });
    const retried = await api('/api/tasks/bulk/retry', { body: filter });
    expect(retried.json).toMatchObject({ count: 2, skippedByReplay: 2 });
    expect(new Set(retried.json.tasks)).toEqual(new Set([newest, trees[1]!.crm]));
  });

  it('refuses a bulk decision with no filter, or without a note', async () => {
    const none = await api('/api/tasks/bulk/retry', { body: { note: 'everything', dryRun: true } });
    expect(none.status).toBe(400);
    expect(none.json.error.message).toMatch(/at least one of state, source or action/);
    expect((await api('/api/tasks/bulk/retry', { body: { state: 'failed' } })).json.error.message).toMatch(/^note/);
    expect((await api('/api/tasks/bulk/retry', { body: { state: 'failed', note: 'x' }, token: null })).status).toBe(401);
  });

  it('names a wrong state with the states there are, as the list does, and says which decisions there are in bulk', async () => {
    const listed = await api('/api/tasks?state=bogus');
    const bulk = await api('/api/tasks/bulk/retry', { body: { state: 'bogus', note: 'x', dryRun: true } });
    expect(bulk.status).toBe(400);
    expect(bulk.json.error.message).toBe(listed.json.error.message);
    expect(bulk.json.error.message).toMatch(/^state\.0: .*"needs_review"/);
    const several = await api('/api/tasks/bulk/replay', { body: { state: ['failed', 'bogus'], note: 'x', dryRun: true } });
    expect(several.json.error.message).toMatch(/^state\.1: .*"succeeded"/);
    // Several comma-separated, as the list's query takes them.
    expect((await api('/api/tasks/bulk/retry', { body: { state: 'failed,needs_review', note: 'x', dryRun: true } })).status).toBe(200);

    const cancel = await api('/api/tasks/bulk/cancel', { body: { state: 'failed', note: 'x' } });
    expect(cancel.status).toBe(404);
    expect(cancel.json.error).toEqual({
      code: 'unknown_bulk_decision',
      message: 'no bulk cancel: the bulk decisions are retry and replay; cancel is decided one task at a time (POST /api/tasks/{id}/cancel)',
    });
    const other = await api('/api/tasks/bulk/undo', { body: { state: 'failed', note: 'x' } });
    expect(other.json.error.message).toBe('no bulk undo: the bulk decisions are retry and replay');
  });
});
