import { sql, type SQL } from 'drizzle-orm';
import { TASK_STATES } from '../decisions.ts';

/**
 * `task` (an alias of `tasks`) failed, and a replay made its effect: nothing is left for a person to do there
 * (a retry would make the effect a second time). A column the replay's success writes (migration 0011), so the
 * queue's looks cost nothing per failed task.
 */
export const doneByReplay = (task: SQL): SQL => sql`(${task}.state = ${TASK_STATES.failed} and ${task}.effect_replay is not null)`;

/**
 * A pending step (an action's `after`) whose predecessor will not succeed on its own: cancelled, or failed with its
 * effect made by a replay (the step waits for the original task, which stays failed). The claim never takes it, so
 * it waits for ever unless a person settles it, or, in the second case, resolves the predecessor.
 *
 * The predecessor is read by its key for each waiting step (as an `exists`, the planner may hash every cancelled and
 * failed task instead, which grow with the history), and its state compared by `in`: the planner then takes the
 * stranded for the sliver of waiting steps they are. As a boolean it took a quarter of them, and with thousands of
 * steps waiting it read a page of the queue by walking every task in page order.
 */
export const strandedSql = (task: SQL): SQL => sql`(${task}.state = ${TASK_STATES.pending} and ${task}.after_task_id is not null
  and (select predecessor.state from tasks predecessor where predecessor.id = ${task}.after_task_id
    and (predecessor.state = ${TASK_STATES.cancelled} or ${doneByReplay(sql`predecessor`)})) in (${TASK_STATES.cancelled}, ${TASK_STATES.failed}))`;
