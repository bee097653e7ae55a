import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import type { AlertTest, Alerts, Bulk, ConfigRefused, Deliveries, Delivery, Destinations, Instances, Rejections, Reloaded, StatsAnswer, Task, Tasks, Tried } from './answers.ts';
import { call, CliError, EXIT, query, type Connection } from './client.ts';
import { TASK_STATES } from '../store/decisions.ts';
import { ATTENTION_STATES } from '../store/operator-rules.ts';
import { urlOption, wholeNumber } from './options.ts';
import * as views from './views.ts';

interface Common {
  url: string;
  token?: string;
  json?: boolean;
}

/** Adds a subcommand speaking to a running oncehook: --url, --token, --json; its exit codes are client.ts's. */
function adminCommand(program: Command, name: string, description: string): Command {
  return program
    .command(name)
    .description(description)
    .addOption(urlOption('the oncehook to ask'))
    .addOption(new Option('--token <token>', 'an admin token').env('ONCEHOOK_ADMIN_TOKEN'))
    .option('--json', 'print the API answer as JSON, for scripts');
}

/**
 * Runs one command: prints the answer (JSON or for people) or the error, and sets the exit code. Printed through
 * the command's output, as commander prints its own errors: a test running commands in its process reads both.
 */
function run<A extends unknown[]>(work: (connection: Connection, ...args: A) => Promise<{ answer: unknown; text: string }>) {
  return async (...args: A) => {
    const options = args[args.length - 2] as Common;
    const output = (args[args.length - 1] as Command).configureOutput();
    const say = (line: string) => output.writeOut!(`${line}\n`);
    try {
      const { answer, text } = await work({ url: options.url, token: options.token }, ...args);
      say(options.json ? JSON.stringify(answer) : text);
    } catch (error) {
      if (!(error instanceof CliError)) throw error;
      if (options.json) say(JSON.stringify(error.body));
      output.writeErr!(`oncehook: ${error.message}\n`);
      process.exitCode = error.exitCode;
    }
  };
}

/** A config refused (422): every problem, each on its line as check-config prints them; the message names their count. */
async function refusedWithProblems<T>(asked: Promise<T>): Promise<T> {
  try {
    return await asked;
  } catch (error) {
    const refused = error instanceof CliError ? (error.body as Partial<ConfigRefused>) : undefined;
    if (!(error instanceof CliError) || !refused?.problems) throw error;
    throw new CliError(`${error.message}\n  ${refused.problems.join('\n  ')}`, EXIT.refused, error.body.error.code, error.body);
  }
}

/** What `paging` adds to a command's options. */
interface Paging {
  limit?: number;
  cursor?: string;
  order?: string;
}

/** What the filters of a list or a bulk decision read as, once commander has parsed them (a type: checkScope reads it by key). */
type Filters = {
  state?: string[];
  source?: string;
  action?: string;
};

const page = (o: Paging) => ({ limit: o.limit, cursor: o.cursor, order: o.order });
const paging = (command: Command) =>
  command
    .addOption(new Option('--limit <n>', 'how many (1–500, default 50)').argParser(wholeNumber(1, 500, 'a whole number from 1 to 500')))
    .option('--cursor <cursor>', 'continue from a previous page')
    .addOption(new Option('--order <order>', 'newest first, or oldest first').choices(['desc', 'asc']));

const note = () => new Option('--note <text>', 'why: recorded with your token label').makeOptionMandatory();

/**
 * A comma-separated `--state` as its entries. An empty one (`failed,`, as a shell history edit leaves) names
 * nothing and is skipped; a list with no entry left is refused, where dropping it would widen a list, the
 * attention queue or a bulk decision to every task. A state there is no such thing as is refused with the list
 * of those there are, before the API is asked.
 */
function stateList(value: string): string[] {
  const states = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (states.length === 0) throw new InvalidArgumentError('names no state: give one or several, comma-separated');
  const known: string[] = Object.values(TASK_STATES);
  const unknown = states.filter((s) => !known.includes(s));
  if (unknown.length > 0) throw new InvalidArgumentError(`${unknown.join(', ')}: no such state; the states are ${known.join(', ')}`);
  return states;
}

/**
 * `replay TASK --after REPLAY`: the task's latest replay the person saw (the last `show` lists), or `none`
 * for none (the API's null). A replay made since — by someone else, or by this command sent twice — makes the
 * API refuse it (409 replay_stale) rather than make one more effect than the person decided on.
 */
const afterOption = () => new Option('--after <replay>', "refuse unless the task's latest replay is this one (none: it has no replay)");

/** `--after` as the API takes it; left out, the API checks no latest replay. (commander turns a parsed null into ''.) */
const seenReplay = (after: string | undefined) => (after === 'none' ? null : after);

const stateOption = (description: string) => new Option('--state <states>', description).argParser(stateList);

/**
 * `--attention` narrowed by `--state`: each listed state must be one the queue holds. One it never holds would
 * make the list empty for a reason the person did not ask for, so it is refused before asking (the API would too).
 */
function checkAttentionStates(listed: string[] | undefined): void {
  const others = (listed ?? []).filter((s) => !ATTENTION_STATES.includes(s as never));
  if (others.length > 0) {
    const covered = ATTENTION_STATES.join(', ');
    throw new CliError(`--state ${others.join(',')}: not among the states --attention covers (${covered}); drop --attention, or that state`, EXIT.usage, 'usage');
  }
}

/** What selects tasks for a bulk decision, and what only a bulk decision takes. */
const FILTERS = { state: '--state', source: '--source', action: '--action' } as const;
const BULK_OPTIONS = { ...FILTERS, dryRun: '--dry-run' } as const;
const given = (options: Record<string, unknown>, flags: Record<string, string>) =>
  Object.entries(flags).filter(([key]) => options[key] !== undefined).map(([, flag]) => flag);

/**
 * One task or a bulk decision, refused before asking when it is neither or both. With a task ID, a bulk option
 * would be dropped unsaid — a `--dry-run` would retry the task for real — and a bulk decision with no filter
 * would reach every task (the API refuses that too, in its own field names).
 */
function checkScope(kind: string, id: string | undefined, options: Record<string, unknown>): void {
  if (id !== undefined) {
    const bulk = given(options, BULK_OPTIONS);
    if (bulk.length > 0) {
      const those = bulk.join(', ');
      throw new CliError(`a task ID and ${those} cannot be combined: drop ${those} to ${kind} the one task, or the ID for a bulk ${kind}`, EXIT.usage, 'usage');
    }
  } else if (given(options, FILTERS).length === 0) {
    throw new CliError(`name a task, or select tasks with --state, --source or --action: a ${kind} of every task is too easy to make by mistake`, EXIT.usage, 'usage');
  }
}

export function addAdminCommands(program: Command): void {
  paging(
    adminCommand(program, 'deliveries', 'list received deliveries and the decision taken on each')
      .option('--source <id>')
      .addOption(new Option('--decision <decision>').choices(['accepted', 'duplicate_delivery', 'duplicate_event', 'duplicate_task']))
      .option('--event-id <id>')
      .option('--delivery-id <id>', "the sender's delivery ID")
      .option('--match <filter>', 'those whose content matches a filter in the actions\' syntax, e.g. \'{"body":{"id":1001}}\''),
  ).action(
    run(async (c, o: Paging & { source?: string; decision?: string; eventId?: string; deliveryId?: string; match?: string }) => {
      const filter = { source: o.source, decision: o.decision, eventId: o.eventId, deliveryId: o.deliveryId, match: o.match };
      const answer = await call<Deliveries>(c, 'GET', `/api/deliveries${query({ ...filter, ...page(o) })}`);
      return { answer, text: views.deliveriesView(answer) };
    }),
  );

  adminCommand(program, 'rejections', 'requests refused at ingest (bad signatures, missing headers, too large…), per source and reason')
    .option('--source <id>')
    .option('--since <when>', 'a time, or how long ago: 15m, 6h (default: the last hour)')
    .action(
      run(async (c, o: { source?: string; since?: string }) => {
        const answer = await call<Rejections>(c, 'GET', `/api/rejections${query({ source: o.source, since: o.since })}`);
        return { answer, text: views.rejectionsView(answer) };
      }),
    );

  paging(
    adminCommand(program, 'tasks', 'list tasks; --attention for the ones waiting for a person')
      .addOption(stateOption('one state or several, comma-separated'))
      .option('--attention', 'needs_review, outcome_unknown, failed (but those a replay did), awaiting_approval, and pending tasks a paused destination holds or a predecessor strands (with --state: those of them listed), oldest first unless --order says otherwise')
      .option('--source <id>')
      .option('--action <id>')
      .option('--owner <name>'),
  ).action(
    run(async (c, o: Paging & Filters & { attention?: boolean; owner?: string }) => {
      if (o.attention) checkAttentionStates(o.state);
      const filter = { attention: o.attention ? 'true' : undefined, state: o.state?.join(','), source: o.source, action: o.action, owner: o.owner };
      // The attention queue oldest first, as the dashboard lists it: the task waiting longest is the most urgent.
      const order = o.order ?? (o.attention ? 'asc' : undefined);
      const answer = await call<Tasks>(c, 'GET', `/api/tasks${query({ ...filter, ...page({ ...o, order }) })}`);
      return { answer, text: views.tasksView(answer) };
    }),
  );

  // explain is show in fewer words: both print the same API answer under --json.
  for (const [name, what, ofDelivery, ofTask] of [
    ['show', 'a delivery (d_…) or a task (t_…) in full: decision, attempts, operator actions', views.deliveryView, views.taskView],
    ['explain', 'why a delivery was decided as it was, or what a task waits for', (d: Delivery) => d.explanation, views.taskExplanation],
  ] as const) {
    adminCommand(program, name, what)
      .argument('<id>')
      .action(
        run(async (c, id: string) => {
          if (id.startsWith('d_')) {
            const answer = await call<Delivery>(c, 'GET', `/api/deliveries/${encodeURIComponent(id)}`);
            return { answer, text: ofDelivery(answer) };
          }
          const answer = await call<Task>(c, 'GET', `/api/tasks/${encodeURIComponent(id)}`);
          return { answer, text: ofTask(answer) };
        }),
      );
  }

  for (const [kind, what] of [
    ['approve', 'let the first send of an awaiting_approval task go'],
    ['cancel', 'decide a task must not happen'],
  ] as const) {
    adminCommand(program, kind, what)
      .argument('<task>')
      .addOption(note())
      .action(
        run(async (c, id: string, o: { note: string }) => {
          const answer = await call<Task>(c, 'POST', `/api/tasks/${encodeURIComponent(id)}/${kind}`, { note: o.note });
          return { answer, text: views.taskExplanation(answer) };
        }),
      );
  }

  adminCommand(program, 'resolve', 'confirm the effect of a task exists, with its reference')
    .argument('<task>')
    .addOption(new Option('--reference <ref>', 'what the downstream calls the effect').makeOptionMandatory())
    .addOption(note())
    .action(
      run(async (c, id: string, o: { reference: string; note: string }) => {
        const answer = await call<Task>(c, 'POST', `/api/tasks/${encodeURIComponent(id)}/resolve`, { reference: o.reference, note: o.note });
        return { answer, text: views.taskExplanation(answer) };
      }),
    );

  for (const [kind, what] of [
    ['retry', 'send a task again; without a task ID, every task the filters select (try --dry-run first)'],
    ['replay', 'a deliberate second effect: a new task with the same bytes; without an ID, every task the filters select'],
  ] as const) {
    const command = adminCommand(program, kind, what)
      .argument('[task]')
      .addOption(note())
      .addOption(stateOption('bulk: one state or several, comma-separated'))
      .option('--source <id>', 'bulk: only this source')
      .option('--action <id>', 'bulk: only this action')
      .option('--dry-run', 'bulk: count the tasks it would change, and change nothing');
    if (kind === 'replay') command.addOption(afterOption());
    command.action(
      run(async (c, id: string | undefined, o: Filters & { note: string; dryRun?: boolean; after?: string }) => {
        checkScope(kind, id, o);
        if (id !== undefined) {
          const answer = await call<Task>(c, 'POST', `/api/tasks/${encodeURIComponent(id)}/${kind}`, { note: o.note, after: seenReplay(o.after) });
          return { answer, text: kind === 'replay' ? `replayed as ${answer.id}\n${views.taskExplanation(answer)}` : views.taskExplanation(answer) };
        }
        if (o.after !== undefined) throw new CliError('--after guards the replay of one task: name the task, or drop --after', EXIT.usage, 'usage');
        const answer = await call<Bulk>(c, 'POST', `/api/tasks/bulk/${kind}`, {
          state: o.state,
          source: o.source,
          action: o.action,
          note: o.note,
          dryRun: Boolean(o.dryRun),
        });
        return { answer, text: views.bulkView(answer) };
      }),
    );
  }

  adminCommand(program, 'assign', 'name who is looking at a task (--none to unassign)')
    .argument('<task>')
    .argument('[owner]')
    .option('--none', 'nobody')
    .option('--note <text>')
    .action(
      run(async (c, id: string, owner: string | undefined, o: { none?: boolean; note?: string }) => {
        if (!owner && !o.none) throw new CliError('name an owner, or pass --none', EXIT.usage, 'usage');
        const answer = await call<Task>(c, 'POST', `/api/tasks/${encodeURIComponent(id)}/assign`, { owner: o.none ? null : owner, note: o.note });
        return { answer, text: views.taskExplanation(answer) };
      }),
    );

  adminCommand(program, 'destinations', 'downstream origins: open, cooling down, or paused after a 401/403').action(
    run(async (c) => {
      const answer = await call<Destinations>(c, 'GET', '/api/destinations');
      return { answer, text: views.destinationsView(answer) };
    }),
  );

  adminCommand(program, 'resume', 'resume a destination paused after a 401/403, once its credentials are fixed')
    .argument('<origin>', 'e.g. https://crm.example')
    .addOption(note())
    .action(
      run(async (c, origin: string, o: { note: string }) => {
        const answer = await call<Destinations>(c, 'POST', `/api/destinations/${encodeURIComponent(origin)}/resume`, { note: o.note });
        return { answer, text: views.destinationsView(answer) };
      }),
    );

  const alerts = paging(adminCommand(program, 'alerts', 'the alerts configured, where their conditions stand, and the messages sent'))
    .option('--alert <name>', 'only the messages of this alert')
    .action(
      run(async (c, o: Paging & { alert?: string }) => {
        const answer = await call<Alerts>(c, 'GET', `/api/alerts${query({ alert: o.alert, ...page(o) })}`);
        return { answer, text: views.alertsView(answer) };
      }),
    );
  adminCommand(alerts, 'test', 'send a test message through an alert now, to see its endpoint receive it')
    .argument('<name>', 'an alert from the config')
    .action(
      run(async (c, name: string) => {
        const answer = await call<AlertTest>(c, 'POST', `/api/alerts/${encodeURIComponent(name)}/test`, {});
        return { answer, text: `test message ${answer.id} queued for ${name}; see it with: oncehook show ${answer.id}` };
      }),
    );

  adminCommand(program, 'reload', 'read the config file again and swap it in; a config with problems is refused whole').action(
    run(async (c) => {
      const answer = await refusedWithProblems(call<Reloaded>(c, 'POST', '/api/config/reload', {}));
      const same = answer.configVersion === answer.previousVersion;
      return { answer, text: `config reloaded: version ${answer.configVersion}${same ? ' (unchanged but for secrets, if any)' : `, was ${answer.previousVersion}`}` };
    }),
  );

  adminCommand(program, 'try-config', 'run the last deliveries through a config file: the tasks it would make, not make, or shape otherwise')
    .argument('<file>', 'the config to try')
    .addOption(new Option('--last <n>', 'how many of the newest deliveries (default 1000; the API takes at most 10,000)').argParser(wholeNumber(1, Number.MAX_SAFE_INTEGER, 'a whole number of deliveries')))
    .option('--source <source>', 'only the deliveries of this source')
    .action(
      run(async (c, file: string, o: { last?: number; source?: string }) => {
        let text: string;
        try {
          text = readFileSync(file, 'utf8');
        } catch (error) {
          throw new CliError(`cannot read ${file}: ${(error as Error).message}`, EXIT.usage, 'usage');
        }
        const answer = await refusedWithProblems(call<Tried>(c, 'POST', '/api/config/try', { config: text, last: o.last, source: o.source }));
        return { answer, text: views.triedView(answer) };
      }),
    );

  adminCommand(program, 'instances', 'the gateway processes heard from lately: role, config version, since when').action(
    run(async (c) => {
      const answer = await call<Instances>(c, 'GET', '/api/instances');
      return { answer, text: views.instancesView(answer) };
    }),
  );

  adminCommand(program, 'stats', 'events, duplicates by kind, attempts, confirmed effects, unresolved work and its age').action(
    run(async (c) => {
      const answer = await call<StatsAnswer>(c, 'GET', '/api/stats');
      return { answer, text: views.statsView(answer) };
    }),
  );
}
