import type { Context } from 'hono';
import { destinationOf } from '../operate/destinations.ts';
import { explainTask } from '../operate/explain.ts';
import { requestOf } from '../operate/task-request.ts';
import { isOrderError } from '../shape/order.ts';
import { isUrlError } from '../shape/url-template.ts';
import { HttpError } from '../errors.ts';
import { predecessorOf, taskView } from '../store/task-view.ts';
import { DecisionCards, ReadOnlyNote } from './decide-forms.tsx';
import type { UiDeps, UiEnv } from './env.ts';
import { Fact } from './facts.tsx';
import { Badge, bytes, Id, ms, Time } from './format.tsx';
import { deliveryHref, taskHref } from './hrefs.ts';
import { page } from './layout.tsx';
import { num, Table } from './table.tsx';
import { TablePanel, TitledPanel } from './titled-panel.tsx';

/** What an operator action changed, in a few words: its starting state and what it named. */
function detailWords(detail: Record<string, unknown> | null): string {
  if (!detail) return '';
  const parts: string[] = [];
  if (typeof detail.from === 'string') parts.push(`from ${detail.from}`);
  for (const key of ['reference', 'owner', 'replay', 'replayOf'] as const) {
    if (key in detail) parts.push(`${key} ${detail[key] === null ? 'none' : String(detail[key])}`);
  }
  if (detail.bulk) parts.push('in bulk');
  return parts.join(' · ');
}

/** One task: where it stands, what a person must decide, its run ledger and every decision taken. */
export async function taskPage(c: Context<UiEnv>, deps: UiDeps) {
  const id = c.req.param('id') ?? '';
  const task = await taskView(deps.store.db, id);
  if (!task) throw new HttpError(404, 'unknown_task', `no task ${id}`);
  const request = requestOf(deps.config, task);
  const { summary, nextDecision } = explainTask(
    task,
    await destinationOf(deps.store, deps.config, task),
    await predecessorOf(deps.store.db, task),
    deps.config.sources[task.source]?.actions[task.action] !== undefined,
  );

  const body = (
    <>
      <h1>
        <span>Task</span> <Id value={task.id} max={80} /> <Badge value={task.state} />
      </h1>
      <p class="lede">{summary}</p>
      {nextDecision ? (
        <div class="callout">
          <strong>Next decision.</strong> {nextDecision}
        </div>
      ) : null}

      <div class="panel">
        <dl class="facts">
          <Fact term="Action">
            {task.source}/<strong>{task.action}</strong>
          </Fact>
          <Fact term="Owner">{task.owner ?? <span class="muted">nobody</span>}</Fact>
          <Fact term="Event">
            <Id value={task.eventId} max={60} /> {task.topic ? <span class="muted">· {task.topic}</span> : null}
          </Fact>
          <Fact term="Delivery">
            <Id value={task.deliveryId} href={deliveryHref(task.deliveryId)} />
          </Fact>
          <Fact term="Created">
            <Time at={task.createdAt} />
          </Fact>
          <Fact term="Updated">
            <Time at={task.updatedAt} />
          </Fact>
          <Fact term="Sends · lookups">
            {task.attempts} · {task.lookups}
          </Fact>
          <Fact term="Next attempt">
            {task.order?.heldBy ? (
              <span class="muted">once the task before it is resolved</span>
            ) : task.state === 'pending' || task.state === 'outcome_unknown' ? (
              <Time at={task.nextAttemptAt} />
            ) : (
              <span class="muted">—</span>
            )}
          </Fact>
          <Fact term="Stored body">
            {task.bodyBytes === null ? <span class="muted">purged by retention</span> : bytes(task.bodyBytes)}
            {task.contentType ? <span class="muted"> · {task.contentType}</span> : null}
          </Fact>
          <Fact term="sha256">
            <Id value={task.bodySha256} max={17} />
          </Fact>
          {request ? (
            <>
              <Fact term="Request">
                <code>
                  {request.method} {request.url}
                </code>
                {request.headers.length > 0 ? <span class="muted"> · headers {request.headers.join(', ')} (values not shown)</span> : null}
              </Fact>
              {request.lookupUrl ? (
                <Fact term="Lookup">
                  <code>GET {request.lookupUrl}</code>
                </Fact>
              ) : null}
            </>
          ) : null}
          {task.transformError ? (
            <Fact term={isUrlError(task.transformError) ? 'URL' : isOrderError(task.transformError) ? 'Order' : 'Transform'}>
              <span class="err">failed: {task.transformError}</span>
            </Fact>
          ) : null}
          <Fact term="Reference">{task.resultReference ? <code>{task.resultReference}</code> : <span class="muted">—</span>}</Fact>
          <Fact term="Last error">{task.lastError ? <span class="err">{task.lastError}</span> : <span class="muted">—</span>}</Fact>
          {task.replayOf ? (
            <Fact term="Replay of">
              <Id value={task.replayOf} href={taskHref(task.replayOf)} />
            </Fact>
          ) : null}
          {task.afterTaskId ? (
            <Fact term="Runs after">
              <Id value={task.afterTaskId} href={taskHref(task.afterTaskId)} />
            </Fact>
          ) : null}
          {task.order ? (
            <Fact term="Order">
              key <code>{task.order.key}</code> ({task.order.mode}), position <code>{String(task.order.position ?? 'arrival')}</code>
            </Fact>
          ) : null}
          {task.order?.heldBy ? (
            <Fact term="Held behind">
              <Id value={task.order.heldBy.id} href={taskHref(task.order.heldBy.id)} /> <Badge value={task.order.heldBy.state} />
            </Fact>
          ) : null}
          {task.order?.supersededBy ? (
            <Fact term="Superseded by">
              <Id value={task.order.supersededBy} href={taskHref(task.order.supersededBy)} />
            </Fact>
          ) : null}
        </dl>
      </div>

      {task.body ? (
        <TitledPanel title={task.transformError ? "The delivery's bytes, kept for the transform" : 'What every attempt sends'}>
          <pre class="body">{task.body.text}</pre>
          {task.body.truncated ? <div class="muted">Cut at 64 KiB; the sha256 above is of the whole body.</div> : null}
        </TitledPanel>
      ) : null}

      <h2>Decide</h2>
      {c.get('readOnly') ? (
        <ReadOnlyNote />
      ) : (
        <DecisionCards
          taskId={task.id}
          state={task.state}
          bodyPurged={task.bodyPurged}
          unshaped={task.transformError !== null}
          owner={task.owner}
          latestReplay={task.replays.at(-1)?.id ?? null}
          csrf={c.get('csrf')}
        />
      )}

      <TitledPanel title="Attempts">
        {task.ledger.length === 0 ? (
          <div class="empty">Not attempted yet.</div>
        ) : (
          <Table head={[num('#'), 'Kind', 'Started', num('HTTP'), 'Class', num('Duration'), 'Reference', 'Decision', 'Error']}>
            {task.ledger.map((attempt) => (
              <tr>
                <td class="num">{attempt.number}</td>
                <td>{attempt.kind}</td>
                <td class="nowrap">
                  <Time at={attempt.startedAt} />
                </td>
                <td class="num">{attempt.responseStatus ?? <span class="muted">—</span>}</td>
                <td>{attempt.class ? <Badge value={attempt.class} /> : <Badge value="in_progress" />}</td>
                <td class="num">{ms(attempt.durationMs)}</td>
                <td>{attempt.reference ? <code>{attempt.reference}</code> : <span class="muted">—</span>}</td>
                <td class="wrap">{attempt.decision ?? <span class="muted">—</span>}</td>
                <td class="wrap err">{attempt.error ?? ''}</td>
              </tr>
            ))}
          </Table>
        )}
      </TitledPanel>

      <TitledPanel title="Operator actions">
        {task.operatorActions.length === 0 ? (
          <div class="empty">No person has decided anything about this task.</div>
        ) : (
          <Table head={['When', 'Who', 'Decision', 'Note', 'Detail']}>
            {task.operatorActions.map((action) => (
              <tr>
                <td class="nowrap">
                  <Time at={action.createdAt} />
                </td>
                <td>
                  <strong>{action.actor}</strong>
                </td>
                <td>{action.kind}</td>
                <td class="wrap">{action.note}</td>
                <td class="muted">{detailWords(action.detail ?? null)}</td>
              </tr>
            ))}
          </Table>
        )}
      </TitledPanel>

      <TablePanel
        title="Replays"
        items={task.replays}
        row={(replay) => (
          <tr>
            <td>
              <Id value={replay.id} href={taskHref(replay.id)} />
            </td>
            <td>
              <Badge value={replay.state} />
            </td>
            <td>
              <Time at={replay.createdAt} />
            </td>
          </tr>
        )}
      />
    </>
  );
  return page(c, deps, 'tasks', `Task ${task.id}`, body);
}
