import { TASK_STATES, type TaskState } from './decisions.ts';

const S = TASK_STATES;

/**
 * From which states a person may take each decision. `in_progress` is never among them: an attempt holds a
 * lease, and its answer decides; a person acts once it has. The guarded statements in atomic/ (operator.ts,
 * replay.ts, bulk.ts) and the 409 messages both read this table, so they cannot disagree.
 */
export const OPERATOR_RULES = {
  approve: { from: [S.awaitingApproval], does: 'lets the first send of the stored bytes go' },
  resolve: {
    from: [S.awaitingApproval, S.pending, S.outcomeUnknown, S.needsReview, S.failed],
    does: 'confirms the effect exists, with a reference',
  },
  retry: { from: [S.outcomeUnknown, S.needsReview, S.failed], does: 'decides it is safe to send again' },
  cancel: {
    from: [S.awaitingApproval, S.pending, S.outcomeUnknown, S.needsReview, S.failed],
    does: 'decides it must not happen',
  },
  replay: { from: [S.succeeded, S.failed, S.cancelled], does: 'makes a deliberate second effect as a new task' },
  assign: {
    from: [S.awaitingApproval, S.pending, S.inProgress, S.outcomeUnknown, S.needsReview, S.failed],
    does: 'names who is looking at it',
  },
} as const satisfies Record<string, { from: readonly TaskState[]; does: string }>;

export type OperatorKind = keyof typeof OPERATOR_RULES;
export const TASK_DECISIONS = ['approve', 'resolve', 'retry', 'cancel', 'replay'] as const satisfies readonly OperatorKind[];
export type TaskDecision = (typeof TASK_DECISIONS)[number];

/** The states in which a task waits for a person, in the order the attention queue shows them. */
export const NEEDS_ATTENTION: readonly TaskState[] = [S.needsReview, S.outcomeUnknown, S.failed, S.awaitingApproval];

/** The states in which a task waits to be sent: a paused destination holds it there until a person resumes it. */
export const AWAITING_DESTINATION: readonly TaskState[] = [S.pending, S.outcomeUnknown];

/** The states the attention queue lists: those above, and a task still to be sent that a paused destination holds. */
export const ATTENTION_STATES: readonly TaskState[] = [...new Set([...NEEDS_ATTENTION, ...AWAITING_DESTINATION])];

export const allowedFrom = (kind: OperatorKind, state: string): boolean =>
  (OPERATOR_RULES[kind].from as readonly string[]).includes(state);

/**
 * The decisions that send the stored bytes again, refused (409 body_purged) once retention purged them. Approve
 * sends them too, but only from awaiting_approval, and retention purges only finished tasks.
 */
export const NEEDS_BODY: readonly OperatorKind[] = ['retry', 'replay'];

/**
 * The decisions a person can take on a task in `state`, without those a purged body rules out, nor a replay of a
 * task whose transform failed: it was never sent, and its retry computes the transform again.
 */
export const decisionsFor = (state: string, bodyPurged = false, unshaped = false): TaskDecision[] =>
  TASK_DECISIONS.filter((kind) => allowedFrom(kind, state) && !(bodyPurged && NEEDS_BODY.includes(kind)) && !(unshaped && kind === 'replay'));
