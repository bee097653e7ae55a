/** What ingest decided about one receipt. Written once, in the transaction that recorded it. */
export const DECISIONS = {
  accepted: 'accepted',
  duplicateDelivery: 'duplicate_delivery',
  duplicateEvent: 'duplicate_event',
  duplicateTask: 'duplicate_task',
  /** A sender checking the endpoint (Slack's url_verification, Meta's subscription): answered, recorded, no task. */
  handshake: 'handshake',
} as const;
export type Decision = (typeof DECISIONS)[keyof typeof DECISIONS];

/** The states of a task, each told in docs/forwarding.md ("Task states"). */
export const TASK_STATES = {
  awaitingApproval: 'awaiting_approval',
  pending: 'pending',
  inProgress: 'in_progress',
  succeeded: 'succeeded',
  outcomeUnknown: 'outcome_unknown',
  needsReview: 'needs_review',
  failed: 'failed',
  cancelled: 'cancelled',
  /** Of an action with `order` in mode latest: a newer task of its key overtook it before it was sent. */
  superseded: 'superseded',
} as const;
export type TaskState = (typeof TASK_STATES)[keyof typeof TASK_STATES];

/** The states in which a task of an ordered action holds its key: the next one waits while it is in one. */
export const UNRESOLVED: readonly TaskState[] = [
  TASK_STATES.pending,
  TASK_STATES.inProgress,
  TASK_STATES.outcomeUnknown,
  TASK_STATES.needsReview,
  TASK_STATES.awaitingApproval,
];

/** Where a task ends: nothing more is sent for it unless a person decides so. */
export const FINISHED_STATES: readonly TaskState[] = [TASK_STATES.succeeded, TASK_STATES.failed, TASK_STATES.cancelled, TASK_STATES.superseded];

/**
 * Ingest wakes the forwarder with this channel, inside the transaction that created the tasks; so do a release and,
 * after its commit, a finish that freed a `maxInFlight` slot a task waits for. Any notification makes a worker claim.
 */
export const TASKS_CHANNEL = 'oncehook_tasks';
