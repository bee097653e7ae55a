import { sql, type SQL } from 'drizzle-orm';

/** What lists and bulk decisions select tasks by; every field narrows, none given selects all. */
export interface TaskFilter {
  /** One state or several (the attention queue asks for four). */
  states?: readonly string[] | undefined;
  source?: string | undefined;
  action?: string | undefined;
  owner?: string | undefined;
  eventId?: string | undefined;
}

/** The filter as a condition on `tasks`: one predicate shared by a list, a dry run and the bulk write it previews. */
export function taskFilterSql(filter: TaskFilter): SQL {
  const parts: SQL[] = [sql`true`];
  if (filter.states && filter.states.length > 0) parts.push(sql`tasks.state in ${inList(filter.states)}`);
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
