import { sql, type SQL } from 'drizzle-orm';
import { AWAITING_DESTINATION, NEEDS_ATTENTION } from '../operator-rules.ts';
import { doneByReplay, strandedSql } from './replay-chain.ts';

/** What lists and bulk decisions select tasks by; every field narrows, none given selects all. */
export interface TaskFilter {
  /** One state or several. */
  states?: readonly string[] | undefined;
  /** The attention queue (see attentionSql); `states` narrows it. */
  attention?: { heldRoutes: readonly string[] } | undefined;
  source?: string | undefined;
  action?: string | undefined;
  owner?: string | undefined;
  eventId?: string | undefined;
}

/** The filter as a condition on `tasks`: one predicate shared by a list, a dry run and the bulk write it previews. */
export function taskFilterSql(filter: TaskFilter): SQL {
  const parts: SQL[] = [sql`true`];
  if (filter.states && filter.states.length > 0) parts.push(sql`tasks.state in ${inList(filter.states)}`);
  if (filter.attention) parts.push(attentionSql(filter.attention.heldRoutes));
  if (filter.source !== undefined) parts.push(sql`tasks.source = ${filter.source}`);
  if (filter.action !== undefined) parts.push(sql`tasks.action = ${filter.action}`);
  if (filter.owner !== undefined) parts.push(sql`tasks.owner = ${filter.owner}`);
  // Through task_refs, which holds the event index (a source, if given, is matched on `tasks` above); as a
  // subquery, so the predicate stays a condition on `tasks` alone for the list, the dry run and the bulk write.
  if (filter.eventId !== undefined) {
    parts.push(sql`tasks.id in (select e.task_id from task_refs e where e.event_id = ${filter.eventId})`);
  }
  return sql.join(parts, sql` and `);
}

/** `('a', 'b')` for `in`: drizzle binds arrays as one parameter, which an `in` cannot take. */
export const inList = (values: readonly string[]): SQL => sql`(${sql.join(values.map((v) => sql`${v}`), sql`, `)})`;

/**
 * The tasks waiting for a person: in a state only a person ends (but a failed one whose effect a replay made), a
 * step whose predecessor will not succeed on its own, or still to be sent on a route (`source/action`) whose
 * destination is paused. The routes are a filter on the row, as in the claim (oncehook_claim_batch), so the planner
 * reads the states' indexes, the waiting steps' index and the due index and sorts the few rows they give; as a
 * row comparison `(source, action) in (…)` it judged most tasks to match and walked every task in page order.
 */
export function attentionSql(heldRoutes: readonly string[]): SQL {
  const parts = [sql`(tasks.state in ${inList(NEEDS_ATTENTION)} and not ${doneByReplay(sql`tasks`)})`, strandedSql(sql`tasks`)];
  if (heldRoutes.length > 0) {
    parts.push(sql`(tasks.state in ${inList(AWAITING_DESTINATION)} and tasks.source || '/' || tasks.action in ${inList(heldRoutes)})`);
  }
  return sql`(${sql.join(parts, sql` or `)})`;
}
