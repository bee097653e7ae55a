import { Hono } from 'hono';
import { z } from 'zod';
import { HttpError, InputError } from '../errors.ts';
import { approveTask } from '../store/atomic.ts';
import type { Store } from '../store/connect.ts';
import { taskView } from '../store/task-view.ts';

const decisionBody = z.strictObject({ note: z.string().trim().min(1, 'a note saying why is required') });

async function readDecision(request: Request) {
  let raw: unknown;
  try {
    raw = await request.json();
  } catch {
    throw new InputError('invalid_json', 'the body must be JSON like {"note": "why"}');
  }
  const parsed = decisionBody.safeParse(raw);
  if (!parsed.success) throw new InputError('invalid_request', parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; '));
  return parsed.data;
}

/** `/api/tasks/{id}`: a task with its run ledger, and a person's approval of its first send. */
export function taskRoutes({ store }: { store: Store }): Hono {
  const app = new Hono();

  app.get('/:id', async (c) => {
    const task = await taskView(store.db, c.req.param('id'));
    if (!task) throw new HttpError(404, 'unknown_task', `no task ${c.req.param('id')}`);
    return c.json(task);
  });

  app.post('/:id/approve', async (c) => {
    const id = c.req.param('id');
    const { note } = await readDecision(c.req.raw);
    const result = await approveTask(store.db, { taskId: id, note });
    if (!result.approved) {
      if (result.state === null) throw new HttpError(404, 'unknown_task', `no task ${id}`);
      throw new HttpError(409, 'not_awaiting_approval', `task ${id} is ${result.state}; only an awaiting_approval task can be approved`);
    }
    return c.json(await taskView(store.db, id));
  });

  return app;
}
