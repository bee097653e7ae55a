import { Hono } from 'hono';
import { z } from 'zod';
import { HttpError } from '../errors.ts';
import type { AdminEnv } from '../http/auth.ts';
import { note, pageOf, pageQuery, readBody, readQuery } from '../http/input.ts';
import { checkAttentionStates, splitStates, stateList, states } from '../http/task-query.ts';
import { decideInBulk } from '../operate/bulk.ts';
import { destinationOf, heldAmong, pausedRoutes, type Held } from '../operate/destinations.ts';
import { explainTask, type TaskExplanation } from '../operate/explain.ts';
import { refused } from '../operate/refusals.ts';
import { replayDecision, retryDecision, type RetryDeps } from '../operate/retry.ts';
import { requestOf } from '../operate/task-request.ts';
import { BULK_DECISIONS, type BulkDecision } from '../store/atomic/bulk.ts';
import { approveTask, assignTask, cancelTask, resolveTask, type Decider, type OperatorOutcome } from '../store/atomic/operator.ts';
import { OPERATOR_RULES } from '../store/operator-rules.ts';
import type { Page } from '../store/queries/cursor.ts';
import { listTasks, type TaskRow } from '../store/queries/tasks.ts';
import { predecessorOf, taskView, type ShownTaskView } from '../store/task-view.ts';

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
  .superRefine(checkAttentionStates);

const noteBody = z.strictObject({ note });
/** `after`: the latest replay the caller saw (the last of the task's `replays`), or null for none. */
const replayBody = z.strictObject({ note, after: z.string().min(1).max(100).nullable().optional() });
const resolveBody = z.strictObject({ reference: z.string().trim().min(1, 'the reference of the effect is required').max(500), note });
const assignBody = z.strictObject({ owner: z.string().trim().min(1).max(100).nullable(), note: z.string().trim().max(2000).optional() });
// At least one filter, and a state for a replay: checked by decideInBulk, for the dashboard's forms too.
const bulkBody = z.strictObject({
  // A state, several comma-separated as in the list's query, or an array: each read by the list's own rules, so
  // a wrong one is answered as the list answers it. (A union of the forms said only "Invalid input".)
  state: z.preprocess((value) => (typeof value === 'string' ? splitStates(value) : value), stateList).optional(),
  source: filterFields.source,
  action: filterFields.action,
  note,
  dryRun: z.boolean().default(false),
});

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

/** What `GET /api/tasks` answers: a page of tasks, each with the paused destination holding it, if one does. */
export type TasksAnswer = Page<TaskRow & { heldBy: string | null; heldFor: Held['use'] | null; heldReason: string | null }>;

/** What `GET /api/tasks/{id}` answers, and each decision on one task: the task, how it goes out, and its explanation. */
export type TaskAnswer = ShownTaskView & { request: ReturnType<typeof requestOf> } & TaskExplanation;

/** `/api/tasks`: lists, one task with its ledger and the decision it waits for, and a person's decisions. */
export function taskRoutes({ store, config, transforms }: RetryDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const view = async (id: string): Promise<TaskAnswer> => {
    const task = await taskView(store.db, id);
    if (!task) throw new HttpError(404, 'unknown_task', `no task ${id}`);
    const explained = explainTask(
      task,
      await destinationOf(store, config, task),
      await predecessorOf(store.db, task),
      config.sources[task.source]?.actions[task.action] !== undefined,
    );
    const { frozenUrls: _, ...shown } = task;
    return { ...shown, request: requestOf(config, task), ...explained };
  };

  app.get('/', async (c) => {
    const query = readQuery(c, listQuery);
    const paused = await pausedRoutes(store, config);
    const attention = query.attention ? { heldRoutes: [...paused.sends.keys()] } : undefined;
    const page = await listTasks(
      store.db,
      { states: query.state, attention, source: query.source, action: query.action, owner: query.owner, eventId: query.eventId },
      pageOf(query),
    );
    const holding = await heldAmong(store, paused, page.items);
    const items = page.items.map((task) => {
      const held = holding.get(task.id);
      return { ...task, heldBy: held?.destination.origin ?? null, heldFor: held?.use ?? null, heldReason: held?.destination.pausedReason ?? null };
    });
    return c.json({ ...page, items } satisfies TasksAnswer);
  });

  app.get('/:id', async (c) => c.json(await view(c.req.param('id'))));

  // Registered before `/:id/…`: "bulk" is never a task ID (they start with t_).
  app.post('/bulk/:kind', async (c) => {
    const kind = bulkDecision(c.req.param('kind'));
    const body = await readBody(c.req.raw, bulkBody, '{"state": "failed", "source": "shop", "note": "why", "dryRun": true}');
    const filter = { states: body.state, source: body.source, action: body.action };
    const run = body.dryRun ? ({ dryRun: true } as const) : ({ dryRun: false, who: { actor: c.get('actor'), note: body.note } } as const);
    return c.json(await decideInBulk({ store, config, transforms }, kind, filter, run));
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
    const outcome = await replayDecision({ store, config, transforms }, id, { after, note, actor: c.get('actor') });
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
