import type { Context } from 'hono';
import { z } from 'zod';
import { note as noteSchema } from '../http/input.ts';
import { refused } from '../operate/refusals.ts';
import { replayDecision, retryDecision } from '../operate/retry.ts';
import { approveTask, assignTask, cancelTask, resolveTask, type OperatorOutcome } from '../store/atomic/operator.ts';
import { resumeDestination } from '../store/atomic/resume.ts';
import type { OperatorKind } from '../store/operator-rules.ts';
import type { UiDeps, UiEnv } from './env.ts';
import { redirectWithFlash } from './flash.ts';
import { localPath } from './guard.tsx';

const field = (form: Record<string, unknown>, name: string) => (typeof form[name] === 'string' ? (form[name] as string).trim() : '');
const reference = z.string().trim().min(1, 'resolving needs the reference of the effect (what the downstream calls it)').max(500);
const owner = z.string().trim().max(100);

const DONE: Record<OperatorKind, string> = {
  approve: 'Approved: the first send will go out shortly.',
  resolve: 'Resolved: the task is succeeded.',
  retry: 'Retry scheduled: the task is pending and due now.',
  cancel: 'Cancelled.',
  replay: 'Replayed as a new task.',
  assign: 'Owner updated.',
};

/**
 * A decision from a form: the same store functions and the same refusals as the API, recorded under the
 * signed-in token's label; the answer is a redirect back with a message, never a stack.
 */
export async function decideFromForm(c: Context<UiEnv>, deps: UiDeps, kind: OperatorKind): Promise<Response> {
  const taskId = c.req.param('id') ?? '';
  const form = await c.req.parseBody();
  const taskPage = `/ui/tasks/${encodeURIComponent(taskId)}`;
  const back = localPath(form.back, taskPage);
  const fail = (text: string) => redirectWithFlash(c, back, { kind: 'error', text });

  const note = noteSchema.safeParse(field(form, 'note'));
  if (!note.success) return fail(`${kind} needs a note saying why.`);
  const who = { actor: c.get('actor'), note: note.data };
  const db = deps.store.db;

  let outcome: OperatorOutcome<{ replay?: string }>;
  switch (kind) {
    case 'approve': {
      const result = await approveTask(db, { taskId, ...who });
      outcome = result.approved ? { done: true } : { done: false, state: result.state, bodyPurged: false };
      break;
    }
    case 'resolve': {
      const ref = reference.safeParse(field(form, 'reference'));
      if (!ref.success) return fail(ref.error.issues[0]?.message ?? 'a reference is required');
      outcome = await resolveTask(db, { taskId, reference: ref.data, ...who });
      break;
    }
    case 'retry':
      outcome = await retryDecision(deps, taskId, who);
      break;
    case 'cancel':
      outcome = await cancelTask(db, { taskId, ...who });
      break;
    case 'replay': {
      // What the page showed as the latest replay ('none', or its ID): a second click is refused, not a second replay.
      const seen = field(form, 'after');
      if (seen === '') return fail('This replay form is from an older page: reload the task, look at its replays, and try again.');
      outcome = await replayDecision(deps, taskId, { after: seen === 'none' ? null : seen, ...who });
      break;
    }
    case 'assign': {
      const name = owner.safeParse(field(form, 'owner'));
      if (!name.success) return fail('an owner name is at most 100 characters');
      outcome = await assignTask(db, { taskId, owner: name.data === '' ? null : name.data, ...who });
      break;
    }
  }
  if (!outcome.done) return fail(refused(taskId, kind, outcome).message);
  if (kind === 'replay' && outcome.replay) {
    return redirectWithFlash(c, `/ui/tasks/${outcome.replay}`, { kind: 'ok', text: `Replay of ${taskId}: this new task sends the same stored bytes under a new ID.` });
  }
  return redirectWithFlash(c, back, { kind: 'ok', text: `${taskId} — ${DONE[kind]}` });
}

/** Resumes a paused destination from its form. */
export async function resumeFromForm(c: Context<UiEnv>, deps: UiDeps): Promise<Response> {
  const form = await c.req.parseBody();
  const origin = field(form, 'origin');
  const note = noteSchema.safeParse(field(form, 'note'));
  const back = '/ui/destinations';
  if (!note.success) return redirectWithFlash(c, back, { kind: 'error', text: 'Resuming needs a note saying why.' });
  const outcome = await resumeDestination(deps.store.db, { origin, note: note.data, actor: c.get('actor') });
  if (!outcome.done) {
    const text = outcome.known ? `${origin} is not paused.` : `No standing is recorded for ${origin}; it is open.`;
    return redirectWithFlash(c, back, { kind: 'error', text });
  }
  return redirectWithFlash(c, back, { kind: 'ok', text: `${origin} resumed: its tasks are claimed again. Tasks that failed on the refusal stay failed — retry them.` });
}
