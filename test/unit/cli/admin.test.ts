import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdminInProcess } from '../../support/cli-in-process.ts';
import { runCli } from '../../support/process.ts';

// A stand-in for the admin API: each path answers what the test put there, and every request is kept.
const answers = new Map<string, { status: number; body: unknown }>();
const asked: string[] = [];
let server: Server;
let url: string;

// In this process: the binary itself is run by the test of a failure before any answer below, and by the e2e tests.
const oncehook = (...args: string[]) => runAdminInProcess(args, { ONCEHOOK_URL: url, ONCEHOOK_ADMIN_TOKEN: 'token' });

beforeAll(async () => {
  server = createServer(async (request, response) => {
    let body = '';
    for await (const chunk of request) body += chunk;
    asked.push(`${request.method} ${request.url}${body ? ` ${body}` : ''}`);
    const answer = answers.get(request.url!.split('?')[0]!) ?? { status: 200, body: { items: [], nextCursor: null, hasMore: false } };
    response.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** A task as GET /api/tasks/{id} answers it, with `fields` in place of the defaults. */
const taskAnswer = (fields: object) => ({
  id: 't_9',
  state: 'pending',
  source: 'shop',
  action: 'crm',
  attempts: 0,
  owner: null,
  createdAt: '2024-01-01T00:00:00.000Z',
  lastError: null,
  heldBy: null,
  bodyPurged: false,
  bodySha256: 'ab'.repeat(32),
  summary: 'pending — shop/crm for event 9, 0 sends',
  nextDecision: null,
  allowedActions: ['resolve', 'cancel'],
  ledger: [],
  operatorActions: [],
  replays: [],
  ...fields,
});

describe('oncehook admin commands, when the API refuses', () => {
  it("prints the API's error with its code under --json, so a script can tell refusals apart", async () => {
    const refusal = { error: { code: 'replay_unsettled', message: 'an earlier replay of t_1 has not finished' } };
    answers.set('/api/tasks/t_1/replay', { status: 409, body: refusal });
    const result = await oncehook('replay', 't_1', '--note', 'again', '--json');
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toEqual(refusal);
    expect(result.stderr).toBe('oncehook: an earlier replay of t_1 has not finished\n');
  });

  it("says a refused token once in the API's words, and what a 401 from anything else means", async () => {
    const refusal = { error: { code: 'token_refused', message: "the bearer token was refused: it matches none of this gateway's admin tokens" } };
    answers.set('/api/stats', { status: 401, body: refusal });
    answers.set('/api/destinations', { status: 401, body: {} });
    const [ours, other] = await Promise.all([oncehook('stats'), oncehook('destinations')]);
    answers.delete('/api/stats');
    answers.delete('/api/destinations');
    expect(ours).toMatchObject({ code: 2, stderr: `oncehook: ${refusal.error.message}\n` });
    expect(other).toMatchObject({ code: 2, stderr: 'oncehook: 401 Unauthorized (the token was refused)\n' });
  });

  it("says a read-only token's refusal in the API's words, its code under --json", async () => {
    const refusal = { error: { code: 'read_only_token', message: 'the token "support" is read-only: it can look at everything and decide nothing; decide with a token given without ":read"' } };
    answers.set('/api/tasks/t_2/approve', { status: 403, body: refusal });
    const [said, json] = await Promise.all([oncehook('approve', 't_2', '--note', 'ok'), oncehook('approve', 't_2', '--note', 'ok', '--json')]);
    answers.delete('/api/tasks/t_2/approve');
    expect(said).toMatchObject({ code: 2, stderr: `oncehook: ${refusal.error.message}\n` });
    expect(JSON.parse(json.stdout)).toEqual(refusal);
  });

  it('names a failure before any answer with a code of its own, in the same shape', async () => {
    const result = await runCli(['stats', '--url', 'http://127.0.0.1:9', '--token', 'token', '--json']);
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stdout)).toMatchObject({ error: { code: 'unreachable', message: expect.stringMatching(/^cannot reach oncehook/) } });
  });
});

describe('oncehook tasks --attention', () => {
  it("asks for the API's attention queue, and says which paused destination holds a task", async () => {
    const held = { id: 't_held', state: 'pending', source: 'shop', action: 'crm', attempts: 0, owner: null, createdAt: new Date().toISOString(), lastError: null, heldBy: 'https://crm.example' };
    answers.set('/api/tasks', { status: 200, body: { items: [held], nextCursor: null, hasMore: false } });
    const [listed, narrowed] = await Promise.all([oncehook('tasks', '--attention'), oncehook('tasks', '--attention', '--state', 'pending', '--json')]);
    answers.delete('/api/tasks');
    expect(asked).toContain('GET /api/tasks?attention=true&order=asc');
    expect(listed.stdout).toMatch(/^t_held\s+pending\s+shop\/crm\s+0\s+—\s+\d+s\s+held: https:\/\/crm\.example is paused$/m);
    expect(narrowed.code).toBe(0);
    expect(asked).toContain('GET /api/tasks?attention=true&state=pending&order=asc');
  });

  // The dashboard lists the queue oldest first: the task waiting longest is the most urgent.
  it('lists the queue oldest first, as the dashboard does, unless --order says otherwise; other lists stay newest first', async () => {
    await Promise.all([
      oncehook('tasks', '--attention', '--owner', 'order-default'),
      oncehook('tasks', '--attention', '--owner', 'order-desc', '--order', 'desc'),
      oncehook('tasks', '--owner', 'order-plain'),
    ]);
    expect(asked).toContain('GET /api/tasks?attention=true&owner=order-default&order=asc');
    expect(asked).toContain('GET /api/tasks?attention=true&owner=order-desc&order=desc');
    expect(asked).toContain('GET /api/tasks?owner=order-plain');
  });

  it('says why a step only pending is listed: its predecessor will not succeed on its own', async () => {
    const step = (id: string, state: string) => ({ id, state: 'pending', source: 'shop', action: 'mail', attempts: 0, owner: null, createdAt: new Date().toISOString(), lastError: null, heldBy: null, strandedBy: { id: 't_crm', state } });
    answers.set('/api/tasks', { status: 200, body: { items: [step('t_after_cancelled', 'cancelled'), step('t_after_replayed', 'failed')], nextCursor: null, hasMore: false } });
    const listed = await oncehook('tasks', '--attention');
    answers.delete('/api/tasks');
    expect(listed.stdout).toMatch(/^t_after_cancelled\s+pending\s+shop\/mail\s+0\s+—\s+\d+s\s+stranded: predecessor cancelled$/m);
    expect(listed.stdout).toMatch(/^t_after_replayed\s+pending\s+shop\/mail\s+0\s+—\s+\d+s\s+stranded: predecessor done by a replay$/m);
  });

  it('narrows to the listed states the queue holds, and refuses one it never does', async () => {
    const [narrowed, refused] = await Promise.all([
      // A trailing comma, as a shell history edit leaves, names no state.
      oncehook('tasks', '--attention', '--state', 'failed,needs_review,', '--json'),
      oncehook('tasks', '--attention', '--state', 'failed,succeeded'),
    ]);
    expect(narrowed.code).toBe(0);
    expect(asked).toContain('GET /api/tasks?attention=true&state=failed%2Cneeds_review&order=asc');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--state succeeded: not among the states --attention covers \(.*, pending\)/);
    expect(asked.filter((request) => request.includes('succeeded'))).toEqual([]);
  });
});

describe('a comma-separated --state', () => {
  it('ignores an empty entry in every command that takes one, and refuses a list with nothing in it', async () => {
    answers.set('/api/tasks/bulk/retry', { status: 200, body: { dryRun: true, kind: 'retry', count: 0 } });
    const [listed, narrowed, bulk, ...empty] = await Promise.all([
      oncehook('tasks', '--state', ',failed, ,needs_review,'),
      oncehook('tasks', '--attention', '--state', 'failed,'),
      oncehook('retry', '--state', 'failed,,', '--note', 'fixed', '--dry-run'),
      oncehook('tasks', '--state', ','),
      // Dropped, an empty list would widen the attention queue to every task.
      oncehook('tasks', '--attention', '--state', ' , '),
      oncehook('replay', '--state', '', '--note', 'again', '--dry-run'),
    ]);
    expect([listed.code, narrowed.code, bulk.code]).toEqual([0, 0, 0]);
    expect(asked).toContain('GET /api/tasks?state=failed%2Cneeds_review');
    expect(asked).toContain('GET /api/tasks?attention=true&state=failed&order=asc');
    expect(asked).toContain('POST /api/tasks/bulk/retry {"state":["failed"],"note":"fixed","dryRun":true}');
    for (const refused of empty) {
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/--state .* names no state: give one or several, comma-separated/);
    }
    expect(asked.filter((request) => request.includes('bulk/replay') || request === 'GET /api/tasks')).toEqual([]);
  });
});

describe('a value the CLI can judge itself', () => {
  /** Runs the commands and returns what each said, having checked that none of them asked the API anything. */
  const refusedLocally = async (...commands: string[][]) => {
    const before = asked.length;
    const results = await Promise.all(commands.map((args) => oncehook(...args)));
    expect(asked.slice(before)).toEqual([]);
    for (const result of results) expect(result.code).toBe(2);
    return results.map((result) => result.stderr);
  };

  it('refuses a --limit that is not a whole number from 1 to 500', async () => {
    const said = await refusedLocally(['tasks', '--limit', 'abc'], ['deliveries', '--limit', '501']);
    for (const line of said) expect(line).toMatch(/^error: option '--limit <n>' argument '\w+' is invalid\. a whole number from 1 to 500\n/);
  });

  it('refuses a state there is no such thing as, listing the states there are', async () => {
    const said = await refusedLocally(['tasks', '--state', 'bogus'], ['retry', '--state', 'failed,nope', '--note', 'x', '--dry-run']);
    const states = 'the states are awaiting_approval, pending, in_progress, succeeded, outcome_unknown, needs_review, failed, cancelled, superseded\n';
    expect(said[0]).toMatch(new RegExp(`^error: option '--state <states>' argument 'bogus' is invalid\\. bogus: no such state; ${states}`));
    expect(said[1]).toMatch(new RegExp(`argument 'failed,nope' is invalid\\. nope: no such state; ${states}`));
  });

  it('refuses a bulk decision that selects nothing, and a task ID with a bulk option, which would be dropped unsaid', async () => {
    const [unfiltered, withState, dryOne] = await refusedLocally(
      ['retry', '--note', 'x', '--dry-run'],
      ['retry', 't_1', '--state', 'failed', '--note', 'x'],
      // A dry run that would retry the task for real.
      ['replay', 't_1', '--dry-run', '--source', 'shop', '--note', 'x'],
    );
    expect(unfiltered).toBe('oncehook: name a task, or select tasks with --state, --source or --action: a retry of every task is too easy to make by mistake\n');
    expect(withState).toBe('oncehook: a task ID and --state cannot be combined: drop --state to retry the one task, or the ID for a bulk retry\n');
    expect(dryOne).toMatch(/^oncehook: a task ID and --source, --dry-run cannot be combined: /);
  });
});

describe('oncehook explain --json', () => {
  it("prints the API's answer for the task or delivery, as show --json does", async () => {
    const task = taskAnswer({});
    const delivery = { id: 'd_9', decision: 'accepted', explanation: 'accepted — event 9 was new', tasks: [] };
    answers.set('/api/tasks/t_9', { status: 200, body: task });
    answers.set('/api/deliveries/d_9', { status: 200, body: delivery });
    const [ofTask, ofDelivery, shown] = await Promise.all([
      oncehook('explain', 't_9', '--json'),
      oncehook('explain', 'd_9', '--json'),
      oncehook('show', 't_9', '--json'),
    ]);
    expect(JSON.parse(ofTask.stdout)).toEqual(task);
    expect(JSON.parse(ofDelivery.stdout)).toEqual(delivery);
    expect(ofTask.stdout).toBe(shown.stdout);
  });
});

describe('a task whose body retention purged', () => {
  it('says so in tasks, show, and a bulk decision that skipped some', async () => {
    const task = taskAnswer({
      id: 't_gone',
      state: 'failed',
      attempts: 3,
      createdAt: new Date().toISOString(),
      lastError: 'HTTP 500',
      bodyPurged: true,
      summary: 'failed — shop/crm for event 9, 3 sends; body purged by retention',
      nextDecision: 'It was not done — HTTP 500. Its body was purged by retention, so it cannot be sent again: resolve if it was done by hand, or cancel.',
    });
    answers.set('/api/tasks', { status: 200, body: { items: [task], nextCursor: null, hasMore: false } });
    answers.set('/api/tasks/t_gone', { status: 200, body: task });
    answers.set('/api/tasks/bulk/retry', { status: 200, body: { dryRun: false, kind: 'retry', count: 0, tasks: [], skippedBodyPurged: 2, skippedByReplay: 1 } });
    const [listed, shown, bulk] = await Promise.all([
      oncehook('tasks', '--state', 'failed'),
      oncehook('show', 't_gone'),
      oncehook('retry', '--state', 'failed', '--note', 'fixed'),
    ]);
    answers.delete('/api/tasks');
    expect(listed.stdout).toMatch(/^t_gone\s+failed\s+shop\/crm\s+3\s+—\s+\d+s\s+body purged by retention; HTTP 500$/m);
    expect(shown.stdout).toMatch(/^body\s+body purged by retention: it cannot be sent again$/m);
    expect(shown.stdout).toMatch(/^allowed: resolve, cancel$/m);
    expect(bulk.stdout).toBe(
      'retry: 0 tasks changed (2 tasks skipped: body purged by retention; 1 task skipped: a replay made the effect or is on its way to; retry one by one to make it again)\n',
    );
  });
});

describe('a bulk replay that passed tasks over', () => {
  it('says how many had a replay still on its way, in the dry run and the real one', async () => {
    answers.set('/api/tasks/bulk/replay', { status: 200, body: { dryRun: true, kind: 'replay', count: 3, skippedBodyPurged: 0, skippedByReplay: 1 } });
    const dry = await oncehook('replay', '--state', 'failed', '--note', 'x', '--dry-run');
    answers.set('/api/tasks/bulk/replay', { status: 200, body: { dryRun: false, kind: 'replay', count: 1, tasks: ['t_r1'], skippedBodyPurged: 0, skippedByReplay: 2 } });
    const done = await oncehook('replay', '--state', 'failed', '--note', 'x');
    answers.delete('/api/tasks/bulk/replay');
    const why = 'a replay in its replay tree has not finished; another now would be one more effect';
    expect(dry.stdout).toBe(`replay would change 3 tasks (1 task skipped: ${why}); run again without --dry-run to do it\n`);
    expect(done.stdout).toBe(`replay: 1 task changed (2 tasks skipped: ${why})\nt_r1\n`);
  });
});

describe('oncehook resume', () => {
  it('encodes the origin itself and says what the API answered about an unknown one', async () => {
    const unknown = { error: { code: 'unknown_destination', message: 'no destination https://crm.example is configured or on record; the destinations are: https://mail.example' } };
    answers.set('/api/destinations/https%3A%2F%2Fcrm.example/resume', { status: 404, body: unknown });
    const [text, json] = await Promise.all([
      oncehook('resume', 'https://crm.example', '--note', 'rotated'),
      oncehook('resume', 'https://crm.example', '--note', 'rotated', '--json'),
    ]);
    expect(text.code).toBe(1);
    expect(text.stderr).toMatch(/^oncehook: no destination https:\/\/crm\.example is configured or on record; the destinations are: https:\/\/mail\.example/);
    expect(JSON.parse(json.stdout).error).toEqual(unknown.error);
  });
});

describe('oncehook show', () => {
  // Every lookup of one unknown outcome carries the number of the send it asks about: "lookup #1" eight times
  // read as one lookup repeated.
  it('names a lookup by the send it asks about', async () => {
    const ledger = [
      { kind: 'send', number: 1, startedAt: '2024-01-01T00:00:00.000Z', responseStatus: null, class: 'unknown', durationMs: 10000, reference: null, error: 'timeout' },
      { kind: 'lookup', number: 1, startedAt: '2024-01-01T00:00:20.000Z', responseStatus: 404, class: 'not_found', durationMs: 3, reference: null, error: null },
    ];
    answers.set('/api/tasks/t_1', { status: 200, body: taskAnswer({ id: 't_1', ledger }) });
    const shown = await oncehook('show', 't_1');
    expect(shown.stdout).toMatch(/^send #1 /m);
    expect(shown.stdout).toMatch(/^lookup of send #1 /m);
  });
});

