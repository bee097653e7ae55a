import type { Context } from 'hono';
import { z } from 'zod';
import { pageOf, pageParams, pageQuery, readQuery } from '../http/input.ts';
import { heldAmong, pausedRoutes, type Held } from '../operate/destinations.ts';
import { heldWordsOf, strandedWords } from '../operate/explain.ts';
import { ATTENTION_STATES } from '../store/operator-rules.ts';
import { taskStates } from '../store/queries/stats.ts';
import { attentionSql } from '../store/queries/task-filter.ts';
import { listTasks, type TaskRow } from '../store/queries/tasks.ts';
import { InlineDecisions, ReadOnlyNote } from './decide-forms.tsx';
import type { UiDeps, UiEnv } from './env.ts';
import { Badge, duration, Id, Time } from './format.tsx';
import { taskHref } from './hrefs.ts';
import { page } from './layout.tsx';
import { num, Table } from './table.tsx';
import { ActionName, Owner, TaskLink } from './task-cells.tsx';

const paging = pageQuery('text');
const query = pageParams({ state: z.enum(ATTENTION_STATES as [string, ...string[]]).optional(), ...paging, limit: paging.limit.default(100), order: paging.order.default('asc') });

/**
 * The empty queue's mark, drawn: it was an emoji, which the fonts of many servers and browsers lack (a headless
 * Chromium with DejaVu drew an empty box).
 */
const Check = () => (
  <svg class="icon" viewBox="0 0 16 16" aria-hidden="true">
    <circle cx="8" cy="8" r="7" fill="none" stroke="#1c6b3a" stroke-width="1.5" />
    <path d="M4.8 8.3l2.2 2.2 4.2-4.6" fill="none" stroke="#1c6b3a" stroke-width="1.6" stroke-linecap="round" stroke-linejoin="round" />
  </svg>
);

/** A tab's name: the queue holds a pending task only while a paused destination does. */
const tabName = (state: string) => (state === 'pending' ? 'pending (held)' : state.replaceAll('_', ' '));

/** Why a task waits: the paused destination holding it, the step before it that will not succeed, else its last error. */
function Why({ held, stranded, lastError }: { held: Held | null; stranded: TaskRow['strandedBy']; lastError: string | null }) {
  if (held) {
    return (
      <div class="err">
        {heldWordsOf(held)}; <a href="/ui/destinations">resume it</a> once its cause is fixed
      </div>
    );
  }
  if (stranded) {
    const words = strandedWords(stranded);
    return (
      <div class="err">
        {words.short}: waits for <a href={taskHref(stranded.id)}>{stranded.id}</a> ({stranded.state}); {words.todo}
      </div>
    );
  }
  return lastError ? <div class="err">{lastError}</div> : null;
}

/** The tasks waiting for a person, oldest first, with what they can decide right in the row. */
export async function attentionPage(c: Context<UiEnv>, deps: UiDeps) {
  const q = readQuery(c, query);
  const paused = await pausedRoutes(deps.store, deps.config);
  const attention = { heldRoutes: [...paused.sends.keys()] };
  const [list, counts] = await Promise.all([
    listTasks(deps.store.db, { states: q.state ? [q.state] : undefined, attention }, pageOf(q)),
    taskStates(deps.store.db, attentionSql(attention.heldRoutes)),
  ]);
  const held = await heldAmong(deps.store, paused, list.items);
  const count = (state: string) => counts.find((s) => s.state === state)?.count ?? 0;
  const oldest = (state: string) => counts.find((s) => s.state === state)?.oldestAgeSeconds ?? null;
  const total = ATTENTION_STATES.reduce((n, s) => n + count(s), 0);
  const back = new URL(c.req.url).pathname + new URL(c.req.url).search;
  const here = (state?: string) => `/ui/attention${state ? `?state=${state}` : ''}`;

  const body = (
    <>
      <h1>Needs attention</h1>
      <p class="lede">
        Tasks oncehook will not settle on its own: among them steps whose predecessor will not succeed, and tasks a paused
        destination holds until someone resumes it. Find out what
        happened downstream, then decide: every decision needs a note and is recorded under your name.
      </p>
      <div class="tabs">
        <a href={here()} class={q.state ? undefined : 'here'}>
          all<span class="n">{total}</span>
        </a>
        {ATTENTION_STATES.map((state) => (
          <a href={here(state)} class={q.state === state ? 'here' : undefined} title={count(state) ? `oldest ${duration(oldest(state))}` : undefined}>
            {tabName(state)}
            <span class="n">{count(state)}</span>
          </a>
        ))}
      </div>
      <div class="panel">
        {list.items.length === 0 ? (
          <div class="empty">
            <Check /> Nothing waits for a person.
          </div>
        ) : (
          <Table head={['Task', 'State', 'Action · why it waits', 'Event', 'Age', 'Owner', num('Sends'), 'Decide']}>
            {list.items.map((task) => (
              <tr id={task.id}>
                <TaskLink id={task.id} />
                <td>
                  <Badge value={task.state} />
                </td>
                <td class="why">
                  <ActionName task={task} />
                  <Why held={held.get(task.id) ?? null} stranded={task.strandedBy} lastError={task.lastError} />
                </td>
                <td>
                  <Id value={task.eventId} max={16} />
                </td>
                <td class="nowrap">
                  <Time at={task.createdAt} />
                </td>
                <Owner owner={task.owner} />
                <td class="num">{task.attempts}</td>
                <td class="decide">
                  {c.get('readOnly') ? (
                    <ReadOnlyNote inline />
                  ) : (
                    <InlineDecisions taskId={task.id} state={task.state} bodyPurged={task.bodyPurged} csrf={c.get('csrf')} back={back} />
                  )}
                </td>
              </tr>
            ))}
          </Table>
        )}
      </div>
      {list.hasMore && list.nextCursor ? (
        <div class="pager">
          <a href={`/ui/attention?${new URLSearchParams({ ...(q.state ? { state: q.state } : {}), limit: String(q.limit), order: q.order, cursor: list.nextCursor })}`}>Next page →</a>
        </div>
      ) : null}
    </>
  );
  return page(c, deps, 'attention', 'Needs attention', body);
}
