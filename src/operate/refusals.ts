import { HttpError } from '../errors.ts';
import type { OperatorOutcome, ReplaySeen } from '../store/atomic/operator.ts';
import { OPERATOR_RULES, type OperatorKind } from '../store/operator-rules.ts';

const rules = (kind: OperatorKind) => OPERATOR_RULES[kind].from.join(', ');

/** A replay asked for from a stale view: what was seen, what is, and that a further effect is a decision of its own. */
function staleReplay(taskId: string, { after, latest }: ReplaySeen): HttpError {
  const message =
    latest === null
      ? `task ${taskId} has no replay, yet the request saw ${after} as its latest; look at the task again`
      : `task ${taskId} was replayed as ${latest} after the view this replay was asked from (which saw ${after ?? 'no replay'}); look at ${latest} first, and replay again only if one more effect is wanted`;
  return new HttpError(409, 'replay_stale', message);
}

/**
 * Why a person's decision on one task was not taken, as the API answers it (status, code, words); the dashboard
 * shows the words.
 */
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
