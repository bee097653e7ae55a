import { Hono } from 'hono';
import { z } from 'zod';
import type { Config } from '../config/schema.ts';
import { HttpError, InputError } from '../errors.ts';
import { BULK_DECISIONS, bulkDecide, countBodyPurged, countBulk, countSkippedByReplay, unshapedTasks, type BulkDecision } from '../store/atomic/bulk.ts';
import {
  approveTask,
  assignTask,
  cancelTask,
  resolveTask,
  type Decider,
  type OperatorOutcome,
  type ReplaySeen,
} from '../store/atomic/operator.ts';
import { replayTask } from '../store/atomic/replay.ts';
import type { Store } from '../store/connect.ts';
import { TASK_STATES } from '../store/decisions.ts';
import { ATTENTION_STATES, OPERATOR_RULES, type OperatorKind } from '../store/operator-rules.ts';
import { listTasks } from '../store/queries/tasks.ts';
import { predecessorOf, taskView } from '../store/task-view.ts';
import type { AdminEnv } from './auth.ts';
import { destinationOf, heldBy, pausedRoutes } from './destinations.ts';
import { explainTask } from './explain.ts';
import { retryDecision, type RetryDeps } from './retry.ts';
import { note, pageOf, pageQuery, readBody, readQuery } from './input.ts';

const state = z.enum(Object.values(TASK_STATES) as [string, ...string[]]);
/**
 * `state=failed,needs_review` selects either. An empty entry is skipped, as the CLI skips it; a list with none
 * left is refused rather than read as no filter. A state that is none is named with the ones there are.
 */
const stateList = z.array(state).min(1, 'names no state: give one or several, comma-separated');
const splitStates = (text: string) => text.split(',').map((s) => s.trim()).filter(Boolean);
const states = z.string().transform(splitStates).pipe(stateList);
const filterFields = { state: states.optional(), source: z.string().min(1).optional(), action: z.string().min(1).optional() };
const listQuery = z
  .strictObject({
    ...filterFields,
    /** The attention queue, which `state` narrows. */
    attention: z.stringbool().optional(),
    owner: z.string().min(1).optional(),
    eventId: z.string().min(1).optional(),
    ...pageQuery('text'),
  })
  // A state the queue never holds would make the list empty for a reason the caller did not ask for.
  .superRefine((query, ctx) => {
    const others = query.attention ? (query.state ?? []).filter((s) => !ATTENTION_STATES.includes(s as never)) : [];
    if (others.length > 0) {
      const message = `${others.join(',')}: not among the states attention lists (${ATTENTION_STATES.join(', ')}); drop attention, or that state`;
      ctx.addIssue({ code: 'custom', path: ['state'], message });
    }
  });

const noteBody = z.strictObject({ note });
/** `after`: the latest replay the caller saw (the last of the task's `replays`), or null for none. */
const replayBody = z.strictObject({ note, after: z.string().min(1).max(100).nullable().optional() });
const resolveBody = z.strictObject({ reference: z.string().trim().min(1, 'the reference of the effect is required').max(500), note });
const assignBody = z.strictObject({ owner: z.string().trim().min(1).max(100).nullable(), note: z.string().trim().max(2000).optional() });
const bulkBody = z
  .strictObject({
    // A state, several comma-separated as in the list's query, or an array: each read by the list's own rules, so
    // a wrong one is answered as the list answers it. (A union of the forms said only "Invalid input".)
    state: z.preprocess((value) => (typeof value === 'string' ? splitStates(value) : value), stateList).optional(),
    source: filterFields.source,
    action: filterFields.action,
    note,
    dryRun: z.boolean().default(false),
  })
  .refine((body) => body.state !== undefined || body.source !== undefined || body.action !== undefined, {
    message: 'name at least one of state, source or action: a bulk decision over every task is too easy to make by mistake',
  });

const rules = (kind: OperatorKind) => OPERATOR_RULES[kind].from.join(', ');

/** A replay asked for from a stale view: what was seen, what is, and that a further effect is a decision of its own. */
function staleReplay(taskId: string, { after, latest }: ReplaySeen): HttpError {
  const message =
    latest === null
      ? `task ${taskId} has no replay, yet the request saw ${after} as its latest; look at the task again`
      : `task ${taskId} was replayed as ${latest} after the view this replay was asked from (which saw ${after ?? 'no replay'}); look at ${latest} first, and replay again only if one more effect is wanted`;
  return new HttpError(409, 'replay_stale', message);
}

export function refused(taskId: string, kind: OperatorKind, outcome: Extract<OperatorOutcome, { done: false }>): HttpError {
  if (outcome.state === null) return new HttpError(404, 'unknown_task', `no task ${taskId}`);
  if (outcome.bodyPurged && (OPERATOR_RULES[kind].from as readonly string[]).includes(outcome.state)) {
    return new HttpError(409, 'body_purged', `task ${taskId}'s stored body was purged by the source's retention; it cannot be sent again`);
  }
  if (outcome.unseenReplay) return staleReplay(taskId, outcome.unseenReplay);
  if (outcome.transformError !== undefined) {
    return new HttpError(422, 'transform_failed', `task ${taskId}'s transform, computed again, made no body: ${outcome.transformError}; nothing changed`);
  }
  if (outcome.unshaped && (OPERATOR_RULES[kind].from as readonly string[]).includes(outcome.state)) {
    return new HttpError(409, 'transform_failed', `task ${taskId} failed at its transform and was never sent: retry it, which computes the transform again`);
  }
  if (outcome.unsettledReplay) {
    return new HttpError(
      409,
      'replay_unsettled',
      `task ${taskId} has a replay in its replay tree that has not finished (${outcome.unsettledReplay}); another now would make one more effect of the same original`,
    );
  }
  // approve shipped with a code of its own before the other decisions; it keeps it.
  const code = kind === 'approve' ? 'not_awaiting_approval' : 'illegal_transition';
  return new HttpError(409, code, `task ${taskId} is ${outcome.state}; ${kind} is allowed only from ${rules(kind)}`);
}

/**
 * The decision a `bulk/` path names. Any other is refused in words of its own: the task routes would read the
 * path as task "bulk" and answer that there is no such task.
 */
function bulkDecision(kind: string): BulkDecision {
  if ((BULK_DECISIONS as readonly string[]).includes(kind)) return kind as BulkDecision;
  const oneByOne = Object.hasOwn(OPERATOR_RULES, kind) ? `; ${kind} is decided one task at a time (POST /api/tasks/{id}/${kind})` : '';
  throw new HttpError(404, 'unknown_bulk_decision', `no bulk ${kind}: the bulk decisions are ${BULK_DECISIONS.join(' and ')}${oneByOne}`);
}

/** The decisions a person takes on one task, each recorded under the token's label with its note. */
const decide: Record<'approve' | 'retry' | 'cancel', (deps: RetryDeps, taskId: string, who: Decider) => Promise<OperatorOutcome>> = {
  approve: async ({ store }, taskId, who) => {
    const result = await approveTask(store.db, { taskId, ...who });
    return result.approved ? { done: true } : { done: false, state: result.state, bodyPurged: false };
  },
  retry: retryDecision,
  cancel: ({ store }, taskId, who) => cancelTask(store.db, { taskId, ...who }),
};

/**
 * An action's URL as people are shown it: its query left out, where an API key is often passed (`?key=…`), and
 * said to be there. A path can be a credential too (an incoming webhook's): that is the config's to keep out.
 */
function shownUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}${parsed.search ? '?…' : ''}`;
}

/**
 * How the task's next attempt goes out, as the config says now: the body is the task's own (`body`), the rest is
 * the action's. Header names only: their values are credentials.
 */
export function requestOf(config: Config, task: { source: string; action: string; contentType: string | null }) {
  const action = config.sources[task.source]?.actions[task.action];
  if (action === undefined) return null;
  return {
    method: action.method,
    url: shownUrl(action.url),
    contentType: task.contentType,
    headers: Object.keys(action.headers ?? {}),
    idempotencyHeader: action.idempotencyHeader,
  };
}

/** `/api/tasks`: lists, one task with its ledger and the decision it waits for, and a person's decisions. */
export function taskRoutes({ store, config, transforms }: RetryDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const view = async (id: string) => {
    const task = await taskView(store.db, id);
    if (!task) throw new HttpError(404, 'unknown_task', `no task ${id}`);
    const explained = explainTask(task, await destinationOf(store, config, task), await predecessorOf(store.db, task));
    return { ...task, request: requestOf(config, task), ...explained };
  };

  app.get('/', async (c) => {
    const query = readQuery(c, listQuery);
    const paused = await pausedRoutes(store, config);
    const attention = query.attention ? { heldRoutes: [...paused.keys()] } : undefined;
    const page = await listTasks(
      store.db,
      { states: query.state, attention, source: query.source, action: query.action, owner: query.owner, eventId: query.eventId },
      pageOf(query),
    );
    return c.json({ ...page, items: page.items.map((task) => ({ ...task, heldBy: heldBy(task, paused)?.origin ?? null })) });
  });

  app.get('/:id', async (c) => c.json(await view(c.req.param('id'))));

  // Registered before `/:id/…`: "bulk" is never a task ID (they start with t_).
  app.post('/bulk/:kind', async (c) => {
    const kind = bulkDecision(c.req.param('kind'));
    const body = await readBody(c.req.raw, bulkBody, '{"state": "failed", "source": "shop", "note": "why", "dryRun": true}');
    // A replay is a second effect of every task it selects, and replay's states include succeeded: a filter by
    // source alone would redo every order that went through.
    if (kind === 'replay' && body.state === undefined) {
      throw new InputError('invalid_request', 'state: a bulk replay needs it (e.g. "failed"): every selected task is sent again, succeeded ones too');
    }
    const filter = {
      states: body.state,
      source: body.source,
      action: body.action,
    };
    // Counted before the write: each replay it makes is itself a replay on its way, and counted after, every task
    // it replayed would be reported passed over.
    const skipped = {
      skippedBodyPurged: await countBodyPurged(store.db, kind, filter),
      skippedByReplay: await countSkippedByReplay(store.db, kind, filter),
    };
    // Tasks whose transform failed: a retry computes it again for each (`transformAgain`), one at a time as a retry
    // of one does, passing over those it fails on again; a replay passes over them all, as it refuses one.
    const unshaped = await unshapedTasks(store.db, kind, filter);
    const again = kind === 'retry' ? { transformAgain: unshaped.length } : {};
    if (body.dryRun) {
      const count = (await countBulk(store.db, kind, filter)) + (kind === 'retry' ? unshaped.length : 0);
      return c.json({ dryRun: true, kind, count, ...skipped, skippedTransformFailed: kind === 'replay' ? unshaped.length : 0, ...again });
    }
    const who = { actor: c.get('actor'), note: body.note };
    const ids = await bulkDecide(store.db, kind, filter, who);
    if (kind === 'replay') return c.json({ dryRun: false, kind, count: ids.length, tasks: ids, ...skipped, skippedTransformFailed: unshaped.length });
    const transformErrors: { task: string; error: string }[] = [];
    for (const id of unshaped) {
      const outcome = await retryDecision({ store, config, transforms }, id, who);
      if (outcome.done) ids.push(id);
      else if (outcome.transformError !== undefined) transformErrors.push({ task: id, error: outcome.transformError });
    }
    return c.json({
      dryRun: false,
      kind,
      count: ids.length,
      tasks: ids,
      ...skipped,
      skippedTransformFailed: transformErrors.length,
      ...again,
      // The first few, each with why: enough to see whether one fix would do for all.
      transformErrors: transformErrors.slice(0, 10),
    });
  });

  for (const kind of ['approve', 'retry', 'cancel'] as const) {
    app.post(`/:id/${kind}`, async (c) => {
      const id = c.req.param('id');
      const { note } = await readBody(c.req.raw, noteBody, '{"note": "why"}');
      const outcome = await decide[kind]({ store, config, transforms }, id, { actor: c.get('actor'), note });
      if (!outcome.done) throw refused(id, kind, outcome);
      return c.json(await view(id));
    });
  }

  app.post('/:id/resolve', async (c) => {
    const id = c.req.param('id');
    const body = await readBody(c.req.raw, resolveBody, '{"reference": "what the downstream calls the effect", "note": "why"}');
    const outcome = await resolveTask(store.db, { taskId: id, ...body, actor: c.get('actor') });
    if (!outcome.done) throw refused(id, 'resolve', outcome);
    return c.json(await view(id));
  });

  app.post('/:id/replay', async (c) => {
    const id = c.req.param('id');
    const { note, after } = await readBody(c.req.raw, replayBody, '{"note": "why a second effect is wanted", "after": null}');
    const outcome = await replayTask(store.db, { taskId: id, after, note, actor: c.get('actor') });
    if (!outcome.done) throw refused(id, 'replay', outcome);
    return c.json(await view(outcome.replay), 201, { location: `/api/tasks/${outcome.replay}` });
  });

  app.post('/:id/assign', async (c) => {
    const id = c.req.param('id');
    const body = await readBody(c.req.raw, assignBody, '{"owner": "alice"}');
    const outcome = await assignTask(store.db, {
      taskId: id,
      owner: body.owner,
      actor: c.get('actor'),
      note: body.note || (body.owner ? `assigned to ${body.owner}` : 'unassigned'),
    });
    if (!outcome.done) throw refused(id, 'assign', outcome);
    return c.json(await view(id));
  });

  return app;
}
