import type { Context } from 'hono';
import { z } from 'zod';
import { blank, note as noteSchema, pageParams, parseQuery } from '../http/input.ts';
import { states } from '../http/task-query.ts';
import { decideInBulk, type BulkFilter, type BulkOutcome } from '../operate/bulk.ts';
import { InputError } from '../errors.ts';
import type { BulkDecision } from '../store/atomic/bulk.ts';
import type { UiDeps, UiEnv } from './env.ts';
import { redirectWithFlash } from './flash.ts';
import { Csrf, page } from './layout.tsx';
import { ReadOnlyNote } from './decide-forms.tsx';
import { filterParams } from './task-filter-form.tsx';
import { TitledPanel } from './titled-panel.tsx';

/** A bulk decision's filter, from the dry run's query or the confirming form: state, source and action. */
const bulkFields = pageParams({ state: blank(states), source: blank(z.string().max(200)), action: blank(z.string().max(200)) });

function filterOf(fields: Record<string, unknown>): BulkFilter {
  const text = (name: string) => (typeof fields[name] === 'string' ? (fields[name] as string) : undefined);
  const parsed = parseQuery({ state: text('state'), source: text('source'), action: text('action') }, bulkFields);
  return { states: parsed.state, source: parsed.source, action: parsed.action };
}

const listOf = (filter: BulkFilter) => `/ui/tasks?${new URLSearchParams(filterParams({ state: filter.states as string[] | undefined, source: filter.source, action: filter.action }))}`;

const VERB: Record<BulkDecision, { does: string; done: string; button: string }> = {
  retry: { does: 'retry', done: 'Retried', button: 'Retry' },
  replay: { does: 'replay', done: 'Replayed', button: 'Replay' },
};

/** What is passed over, each with why, as the API's answer names them. */
function passedOver(outcome: BulkOutcome): [string, number, string][] {
  const rows: [string, number, string][] = [
    ['skippedBodyPurged', outcome.skippedBodyPurged, 'their stored body was purged by retention: they cannot be sent again'],
    ['skippedByReplay', outcome.skippedByReplay, 'a later replay stands for them, or a replay in their replay tree is still on its way: one more now would be one more effect'],
  ];
  if (outcome.kind === 'replay') rows.push(['skippedTransformFailed', outcome.skippedTransformFailed, 'their transform failed and nothing was ever sent: retry them instead']);
  return rows;
}

/** The filter in words: what the person is about to decide over. */
function FilterWords({ filter }: { filter: BulkFilter }) {
  return (
    <dl class="facts">
      <dt>State</dt>
      <dd>{filter.states ? filter.states.map((s) => s.replaceAll('_', ' ')).join(', ') : <span class="muted">any the decision is allowed from</span>}</dd>
      <dt>Source</dt>
      <dd>{filter.source ?? <span class="muted">any</span>}</dd>
      <dt>Action</dt>
      <dd>{filter.action ?? <span class="muted">any</span>}</dd>
    </dl>
  );
}

/**
 * A bulk retry or replay's dry run (`dryRun: true`, changing nothing) and, if it would change any task, the form
 * that confirms it with a note. A filter the API would refuse goes back to the list, saying why.
 */
export async function bulkDryRunPage(c: Context<UiEnv>, deps: UiDeps, kind: BulkDecision) {
  const filter = filterOf({ state: (c.req.queries('state') ?? []).join(',') || undefined, source: c.req.query('source'), action: c.req.query('action') });
  let outcome: BulkOutcome;
  try {
    outcome = await decideInBulk(deps, kind, filter, { dryRun: true });
  } catch (error) {
    if (error instanceof InputError) return redirectWithFlash(c, listOf(filter), { kind: 'error', text: `No bulk ${kind}: ${error.message}.` });
    throw error;
  }
  const verb = VERB[kind];
  const body = (
    <>
      <h1>Bulk {kind}: dry run</h1>
      <p class="lede">
        Nothing has changed yet. This is what a {verb.does} of every task this filter selects would do now; <a href={listOf(filter)}>the list</a> shows the tasks it
        selects in every state.
      </p>
      <div class="panel">
        <FilterWords filter={filter} />
      </div>
      <TitledPanel title="What it would do">
        <table class="kv" id="dry-run">
          <tbody>
            <tr data-key="count">
              <th>would {verb.does}</th>
              <td class="num">
                <strong>{outcome.count.toLocaleString('en')}</strong>
              </td>
              <td class="muted">{kind === 'retry' ? 'back to pending, due now' : 'each a new pending task sending the same stored bytes under a new ID'}</td>
            </tr>
            {outcome.transformAgain ? (
              <tr data-key="transformAgain">
                <th>of them, transform again</th>
                <td class="num">{outcome.transformAgain.toLocaleString('en')}</td>
                <td class="muted">failed at their transform: each is computed again first, with the action as configured now, and passed over if it fails again</td>
              </tr>
            ) : null}
            {passedOver(outcome).map(([key, n, why]) => (
              <tr data-key={key}>
                <th>passed over</th>
                <td class="num">{n.toLocaleString('en')}</td>
                <td class={n ? undefined : 'muted'}>{why}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TitledPanel>
      {outcome.count === 0 ? (
        <p class="muted">Nothing to {verb.does}. <a href={listOf(filter)}>Back to the list</a>.</p>
      ) : c.get('readOnly') ? (
        <ReadOnlyNote />
      ) : (
        <form class="decision confirm" method="post" action={`/ui/tasks/bulk/${kind}`}>
          <Csrf token={c.get('csrf')} />
          <input type="hidden" name="state" value={filter.states?.join(',') ?? ''} />
          <input type="hidden" name="source" value={filter.source ?? ''} />
          <input type="hidden" name="action" value={filter.action ?? ''} />
          <input type="hidden" name="seen" value={String(outcome.count)} />
          <h3>Confirm</h3>
          <p>
            Each {verb.does} is recorded under your name with this note, marked as taken in bulk. Tasks that change meanwhile are decided as they stand
            then: the answer says how many it was.
          </p>
          <textarea name="note" required placeholder="note: why (recorded with your name on every task)" maxlength={2000} aria-label={`note for the bulk ${kind}`} />
          <div class="row">
            <a href={listOf(filter)}>Cancel</a>{' '}
            <button type="submit" class={kind === 'replay' ? 'danger' : 'primary'}>
              {verb.button} {outcome.count.toLocaleString('en')} task{outcome.count === 1 ? '' : 's'}
            </button>
          </div>
        </form>
      )}
    </>
  );
  return page(c, deps, 'tasks', `Bulk ${kind}`, body);
}

/** The confirmed bulk decision: the same function as the API's, then back to the list with what it did. */
export async function bulkFromForm(c: Context<UiEnv>, deps: UiDeps, kind: BulkDecision): Promise<Response> {
  const form = await c.req.parseBody();
  const filter = filterOf(form);
  const dryRunPage = `/ui/tasks/bulk/${kind}?${new URLSearchParams(filterParams({ state: filter.states as string[] | undefined, source: filter.source, action: filter.action }))}`;
  const note = noteSchema.safeParse(typeof form.note === 'string' ? form.note : '');
  if (!note.success) return redirectWithFlash(c, dryRunPage, { kind: 'error', text: `A bulk ${kind} needs a note saying why.` });
  let outcome: BulkOutcome;
  try {
    outcome = await decideInBulk(deps, kind, filter, { dryRun: false, who: { actor: c.get('actor'), note: note.data } });
  } catch (error) {
    if (error instanceof InputError) return redirectWithFlash(c, listOf(filter), { kind: 'error', text: `No bulk ${kind}: ${error.message}.` });
    throw error;
  }
  const parts = [`${VERB[kind].done} ${outcome.count} task${outcome.count === 1 ? '' : 's'}.`];
  const seen = Number(form.seen);
  if (Number.isInteger(seen) && seen !== outcome.count) parts.push(`The dry run counted ${seen}: tasks changed in between.`);
  const over = passedOver(outcome).filter(([, n]) => n > 0);
  if (over.length > 0) parts.push(`Passed over: ${over.map(([key, n]) => `${n} (${key})`).join(', ')}.`);
  if (!outcome.dryRun && outcome.transformErrors?.length) {
    const first = outcome.transformErrors[0]!;
    parts.push(`${outcome.skippedTransformFailed} failed at their transform again and were left as they were, e.g. ${first.task}: ${first.error}`);
  }
  return redirectWithFlash(c, listOf(filter), { kind: 'ok', text: parts.join(' ') });
}
