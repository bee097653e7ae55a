import type { Context } from 'hono';
import { z } from 'zod';
import { blank, pageParams, pageQuery, parseQuery } from '../http/input.ts';
import { checkAttentionStates, states } from '../http/task-query.ts';
import type { BulkFilter } from '../operate/bulk.ts';
import type { Config } from '../config/schema.ts';
import { TASK_STATES } from '../store/decisions.ts';
import { ChoiceField } from './choice-field.tsx';

const paging = pageQuery('text');

/** The Tasks page's filters: the API's list filters, each field empty meaning "any", and its paging. */
export const taskListQuery = pageParams({
  state: blank(states),
  source: blank(z.string().max(200)),
  action: blank(z.string().max(200)),
  owner: blank(z.string().max(100)),
  eventId: blank(z.string().max(500)),
  attention: blank(z.stringbool()),
  ...paging,
}).superRefine(checkAttentionStates);
export type TaskListQuery = z.infer<typeof taskListQuery>;

/**
 * The page's query: the state checkboxes send `state` once for each, and a link writes them comma-separated as the
 * API takes them; both are read, joined.
 */
export function readTaskQuery(c: Context): TaskListQuery {
  const chosen = (c.req.queries('state') ?? []).join(',');
  return parseQuery({ ...c.req.query(), state: chosen === '' ? undefined : chosen }, taskListQuery);
}

/** The filter's fields as query parameters, states comma-separated: what a link back to the same list carries. */
export function filterParams(q: Partial<TaskListQuery>): Record<string, string> {
  const params: Record<string, string> = {};
  if (q.state?.length) params.state = q.state.join(',');
  for (const key of ['source', 'action', 'owner', 'eventId'] as const) if (q[key] !== undefined) params[key] = q[key];
  if (q.attention) params.attention = 'true';
  return params;
}

/** What of the list's filter a bulk decision takes (state, source and action), and what it would leave out. */
export function bulkPart(q: TaskListQuery): { filter: BulkFilter; ignored: string[] } {
  const ignored = [q.owner !== undefined && 'owner', q.eventId !== undefined && 'event ID', q.attention && 'attention'].filter((x): x is string => Boolean(x));
  return { filter: { states: q.state, source: q.source, action: q.action }, ignored };
}

/** The actions configured under any source, each name once: the action filter's choices. */
const actionNames = (config: Config) => [...new Set(Object.values(config.sources).flatMap((source) => Object.keys(source.actions)))].sort();

/** The filter form: GET, so a filtered list is a link to keep or share. */
export function TaskFilterForm({ q, config }: { q: TaskListQuery; config: Config }) {
  const filtered = Object.keys(filterParams(q)).length > 0;
  return (
    <form class="filters" method="get" action="/ui/tasks">
      <fieldset class="states">
        <legend>State</legend>
        {Object.values(TASK_STATES).map((state) => (
          <label class="check">
            <input type="checkbox" name="state" value={state} checked={q.state?.includes(state) ?? false} /> {state.replaceAll('_', ' ')}
          </label>
        ))}
      </fieldset>
      <ChoiceField name="source" label="Source" choices={Object.keys(config.sources)} selected={q.source} />
      <ChoiceField name="action" label="Action" choices={actionNames(config)} selected={q.action} />
      <div class="field">
        <label for="owner">Owner</label>
        <input id="owner" name="owner" value={q.owner ?? ''} placeholder="exact name" maxlength={100} />
      </div>
      <div class="field">
        <label for="eventId">Event ID</label>
        <input id="eventId" name="eventId" value={q.eventId ?? ''} placeholder="exact event ID" maxlength={500} />
      </div>
      <ChoiceField name="order" label="Order" choices={['desc', 'asc']} selected={q.order} any={false} words={(order) => (order === 'asc' ? 'oldest first' : 'newest first')} />
      <label class="check attention">
        <input type="checkbox" name="attention" value="true" checked={q.attention ?? false} /> only what waits for a person
      </label>
      {q.limit !== 50 ? <input type="hidden" name="limit" value={String(q.limit)} /> : null}
      <button type="submit" class="primary">
        Filter
      </button>
      {filtered ? <a href="/ui/tasks">clear</a> : null}
    </form>
  );
}
