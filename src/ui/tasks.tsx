import type { Context } from 'hono';
import { pageOf } from '../http/input.ts';
import { heldAmong, pausedRoutes } from '../operate/destinations.ts';
import { heldWordsOf } from '../operate/explain.ts';
import { listTasks } from '../store/queries/tasks.ts';
import type { UiDeps, UiEnv } from './env.ts';
import { Badge, Id, Time } from './format.tsx';
import { page } from './layout.tsx';
import { Pager } from './pager.tsx';
import { num, Table } from './table.tsx';
import { ActionName, Owner, TaskLink } from './task-cells.tsx';
import { bulkPart, filterParams, readTaskQuery, TaskFilterForm, type TaskListQuery } from './task-filter-form.tsx';

/**
 * Where a bulk retry or replay of this list starts: its dry run, a GET that changes nothing. Offered only when the
 * list's filter is one a bulk decision applies whole, so the tasks it considers are the ones listed.
 */
function BulkLinks({ q }: { q: TaskListQuery }) {
  const { filter, ignored } = bulkPart(q);
  const params = filterParams({ state: filter.states as string[] | undefined, source: filter.source, action: filter.action });
  let body;
  if (ignored.length > 0) {
    body = (
      <p class="muted">
        A bulk decision selects by state, source and action only; this list also filters by {ignored.join(' and ')}.{' '}
        <a href={`/ui/tasks?${new URLSearchParams(params)}`}>List without {ignored.length > 1 ? 'them' : 'it'}</a> to retry or replay in bulk.
      </p>
    );
  } else if (Object.keys(params).length === 0) {
    body = <p class="muted">Choose a state, a source or an action to retry or replay what it selects in bulk: over every task is too easy to do by mistake.</p>;
  } else {
    const dryRun = (kind: string) => `/ui/tasks/bulk/${kind}?${new URLSearchParams(params)}`;
    body = (
      <p>
        <a class="button" href={dryRun('retry')}>
          Retry all…
        </a>{' '}
        {filter.states ? (
          <a class="button" href={dryRun('replay')}>
            Replay all…
          </a>
        ) : (
          <span class="muted">Replay in bulk needs a state: replay selects succeeded tasks too.</span>
        )}{' '}
        <span class="muted">Each shows first how many tasks it would change and which it passes over; nothing changes until you confirm with a note.</span>
      </p>
    );
  }
  return (
    <div class="panel pad bulk" id="bulk">
      <h3>In bulk</h3>
      {body}
    </div>
  );
}

/** Every task, filtered by the admin API's list filters and paged by its cursors, with bulk decisions over the filter. */
export async function tasksPage(c: Context<UiEnv>, deps: UiDeps) {
  const q = readTaskQuery(c);
  const paused = await pausedRoutes(deps.store, deps.config);
  const attention = q.attention ? { heldRoutes: [...paused.sends.keys()] } : undefined;
  const list = await listTasks(deps.store.db, { states: q.state, attention, source: q.source, action: q.action, owner: q.owner, eventId: q.eventId }, pageOf(q));
  const holding = await heldAmong(deps.store, paused, list.items);
  const keep = filterParams(q);
  const filtered = Object.keys(keep).length > 0;
  const paged = { ...keep, limit: String(q.limit), order: q.order };
  const body = (
    <>
      <h1>Tasks</h1>
      <p class="lede">Every task, filtered as the admin API's list filters them. Open one to decide about it, or retry or replay what a filter selects in bulk.</p>
      <TaskFilterForm q={q} config={deps.config} />
      {c.get('readOnly') ? null : <BulkLinks q={q} />}
      <div class="panel" id="task-list">
        {list.items.length === 0 ? (
          <div class="empty">No tasks{filtered ? ' match this filter' : ' yet'}.</div>
        ) : (
          <Table head={['Task', 'State', 'Action · last error', 'Event', 'Owner', 'Created', 'Updated', num('Sends')]}>
            {list.items.map((task) => {
              const held = holding.get(task.id);
              return (
                <tr id={task.id}>
                  <TaskLink id={task.id} />
                  <td>
                    <Badge value={task.state} />
                    {task.bodyPurged ? <div class="muted">body purged</div> : null}
                  </td>
                  <td class="why">
                    <ActionName task={task} />
                    {held ? <div class="err">{heldWordsOf(held)}</div> : task.lastError ? <div class="err">{task.lastError}</div> : null}
                  </td>
                  <td>
                    <Id value={task.eventId} href={`/ui/tasks?${new URLSearchParams({ eventId: task.eventId })}`} max={16} />
                  </td>
                  <Owner owner={task.owner} />
                  <td class="nowrap">
                    <Time at={task.createdAt} />
                  </td>
                  <td class="nowrap">
                    <Time at={task.updatedAt} />
                  </td>
                  <td class="num">{task.attempts}</td>
                </tr>
              );
            })}
          </Table>
        )}
      </div>
      <Pager path="/ui/tasks" paged={paged} at={q.cursor} next={list.hasMore ? list.nextCursor : null} />
    </>
  );
  return page(c, deps, 'tasks', 'Tasks', body);
}
