import type { Context } from 'hono';
import { z } from 'zod';
import { blank, pageOf, pageParams, pageQuery, readQuery } from '../http/input.ts';
import { shownBody } from '../operate/delivery-body.ts';
import { parseMatch } from '../operate/delivery-search.ts';
import { explainDelivery, tasksMadeWords } from '../operate/explain.ts';
import { HttpError, InputError } from '../errors.ts';
import type { Filter } from '../shape/filter.ts';
import { DECISIONS } from '../store/decisions.ts';
import type { Page } from '../store/queries/cursor.ts';
import { deliveryView, listDeliveries, type DeliveryRow } from '../store/queries/deliveries.ts';
import { searchDeliveries } from '../store/queries/delivery-search.ts';
import { ChoiceField } from './choice-field.tsx';
import type { UiDeps, UiEnv } from './env.ts';
import { Fact } from './facts.tsx';
import { Badge, bytes, Id, Time } from './format.tsx';
import { deliveryHref, taskHref } from './hrefs.ts';
import { page } from './layout.tsx';
import { Pager } from './pager.tsx';
import { num, Table } from './table.tsx';
import { TablePanel, TitledPanel } from './titled-panel.tsx';

const listQuery = pageParams({
  source: blank(z.string().max(200)),
  decision: blank(z.enum(Object.values(DECISIONS) as [string, ...string[]])),
  eventId: blank(z.string().max(500)),
  match: blank(z.string()),
  ...pageQuery('bigint'),
});

/** The search box's filter, or why it is not one: said on the page, beside the box, rather than as an error page. */
function searchOf(text: string | undefined): { match?: Filter; problem?: string } {
  if (text === undefined) return {};
  try {
    return { match: parseMatch(text) };
  } catch (error) {
    if (error instanceof InputError) return { problem: error.message };
    throw error;
  }
}

function DeliveryTable({ rows }: { rows: DeliveryRow[] }) {
  return (
    <Table head={['Received', 'Receipt', 'Source', 'Decision', 'Tasks', 'Topic', 'Event ID', "Sender's delivery ID", num('Size')]}>
      {rows.map((row) => (
        <tr>
          <td class="nowrap">
            <Time at={row.receivedAt} />
          </td>
          <td>
            <Id value={row.id} href={deliveryHref(row.id)} max={34} />
          </td>
          <td>{row.source}</td>
          <td>
            <Badge value={row.decision} />
          </td>
          <td class="nowrap">{tasksMadeWords(row) ?? <span class="muted">—</span>}</td>
          <td class="nowrap">{row.topic ?? <span class="muted">—</span>}</td>
          <td>
            <Id value={row.eventId} max={28} />
          </td>
          <td>
            <Id value={row.deliveryId} max={28} />
          </td>
          <td class="num">{bytes(row.bodyBytes)}</td>
        </tr>
      ))}
    </Table>
  );
}

/** Every verified receipt with its decision, newest first, filtered by source, decision and event ID. */
export async function deliveriesPage(c: Context<UiEnv>, deps: UiDeps) {
  const q = readQuery(c, listQuery);
  const filter = { source: q.source, decision: q.decision, eventId: q.eventId };
  const search = searchOf(q.match);
  const list: Page<DeliveryRow> & { partial?: boolean } = search.problem
    ? { items: [], nextCursor: null, hasMore: false, partial: false }
    : search.match
      ? await searchDeliveries(deps.store.db, filter, search.match, pageOf(q))
      : await listDeliveries(deps.store.db, filter, pageOf(q));
  const keep = Object.fromEntries(Object.entries({ ...filter, match: q.match }).filter(([, v]) => v !== undefined)) as Record<string, string>;
  const filtered = Object.keys(keep).length > 0;
  const paged = { ...keep, limit: String(q.limit), order: q.order };
  const body = (
    <>
      <h1>Deliveries</h1>
      <p class="lede">
        Every verified receipt and what oncehook decided about it. Open one to see why, and the body it carried. Requests
        refused before anything was recorded are counted under <a href="/ui/rejections">Refused</a>.
      </p>
      <form class="filters" method="get" action="/ui/deliveries">
        <ChoiceField name="source" label="Source" choices={Object.keys(deps.config.sources)} selected={q.source} />
        <ChoiceField name="decision" label="Decision" choices={Object.values(DECISIONS)} selected={q.decision} words={(decision) => decision.replaceAll('_', ' ')} />
        <div class="field">
          <label for="eventId">Event ID</label>
          <input id="eventId" name="eventId" value={q.eventId ?? ''} placeholder="exact event ID" />
        </div>
        <div class="field wide">
          <label for="match">Content</label>
          <input id="match" name="match" value={q.match ?? ''} placeholder='a filter, e.g. {"body":{"id":1001}}' />
        </div>
        <button type="submit" class="primary">
          Filter
        </button>
        {filtered ? <a href="/ui/deliveries">clear</a> : null}
      </form>
      {search.problem ? (
        <div class="flash error" role="alert">
          {search.problem}
        </div>
      ) : null}
      <div class="panel">{list.items.length === 0 ? <div class="empty">No deliveries{filtered ? ' match' : ' yet'}{list.partial ? ' among the latest read' : ''}.</div> : <DeliveryTable rows={list.items} />}</div>
      {list.partial ? <p class="muted">The search stopped at its bound of receipts read; older ones may match too (Older →).</p> : null}
      <Pager path="/ui/deliveries" paged={paged} at={q.cursor} next={list.hasMore ? list.nextCursor : null} />
    </>
  );
  return page(c, deps, 'deliveries', 'Deliveries', body);
}

/** One receipt: its decision in words, what it matched, and the tasks it is about as they stand now. */
export async function deliveryPage(c: Context<UiEnv>, deps: UiDeps) {
  const id = c.req.param('id') ?? '';
  const view = await deliveryView(deps.store.db, id);
  if (!view) throw new HttpError(404, 'unknown_delivery', `no delivery ${id}`);
  const received = await shownBody(deps.store.db, view.id, deps.config);
  const body = (
    <>
      <h1>
        <span>Delivery</span> <Id value={view.id} max={80} /> <Badge value={view.decision} />
      </h1>
      <p class="lede">{explainDelivery(view)}</p>
      <div class="panel">
        <dl class="facts">
          <Fact term="Source">{view.source}</Fact>
          <Fact term="Topic">{view.topic ?? <span class="muted">—</span>}</Fact>
          <Fact term="Event ID">
            <Id value={view.eventId} href={`/ui/deliveries?${new URLSearchParams({ eventId: view.eventId })}`} max={60} />
          </Fact>
          <Fact term="Sender's delivery ID">
            <Id value={view.deliveryId} max={60} />
          </Fact>
          <Fact term="Received">
            <Time at={view.receivedAt} />
          </Fact>
          <Fact term="Occurred">
            <Time at={view.occurredAt} />
          </Fact>
          <Fact term="Body">
            {bytes(view.bodyBytes)} {view.contentType ? <span class="muted">· {view.contentType}</span> : null}
          </Fact>
          <Fact term="sha256">
            <Id value={view.bodySha256} max={17} />
          </Fact>
          {view.matched ? (
            <Fact term="Matched">
              <Id value={view.matched.id} href={deliveryHref(view.matched.id)} /> <Badge value={view.matched.decision} />
            </Fact>
          ) : null}
          {view.origin && view.origin.id !== view.id ? (
            <Fact term="Tasks created by">
              <Id value={view.origin.id} href={deliveryHref(view.origin.id)} />
            </Fact>
          ) : null}
        </dl>
      </div>

      <TitledPanel title="Tasks">
        {view.tasks.length === 0 ? (
          <div class="empty">{view.skipped.length > 0 ? 'No task: no action took this delivery (below).' : 'No task: no configured action takes this topic.'}</div>
        ) : (
          <Table head={['Task', 'Action', 'State', 'Owner', 'Reference', 'Last error']}>
            {view.tasks.map((task) => (
              <tr>
                <td>
                  <Id value={task.id} href={taskHref(task.id)} />
                </td>
                <td>{task.action}</td>
                <td>
                  <Badge value={task.state} />
                </td>
                <td>{task.owner ?? <span class="muted">—</span>}</td>
                <td>{task.resultReference ? <code>{task.resultReference}</code> : <span class="muted">—</span>}</td>
                <td class="wrap err">{task.lastError ?? ''}</td>
              </tr>
            ))}
          </Table>
        )}
      </TitledPanel>

      <TablePanel
        title="Actions that made no task"
        head={['Action', 'Why', 'What did not match']}
        items={view.skipped}
        row={(skip) => (
          <tr>
            <td>{skip.action}</td>
            <td>{skip.reason === 'topic' ? 'its topics' : 'its filter'}</td>
            <td class="wrap">
              <code>{skip.detail}</code>
            </td>
          </tr>
        )}
      />

      {view.repeats.length > 0 ? (
        <TitledPanel title="Later repeats of this receipt">
          <DeliveryTable rows={view.repeats} />
        </TitledPanel>
      ) : null}

      <TitledPanel title="Body received">
        {received.body === null ? (
          <p class="muted">Purged by retention, with the headers it came with.</p>
        ) : (
          <>
            {received.bodyEncoding === 'base64' ? <div class="muted">Not text: shown as base64.</div> : null}
            <pre class="body">{received.body}</pre>
            {received.bodyTruncated ? <div class="muted">Cut at 64 KiB; the sha256 above is of the whole body.</div> : null}
          </>
        )}
      </TitledPanel>

      <TitledPanel title="Headers">
        {view.headers === null ? (
          <p class="muted">Purged by retention, with the bodies of the request they came with.</p>
        ) : (
          <table class="kv">
            <tbody>
              {Object.entries(view.headers).map(([name, value]) => (
                <tr>
                  <th>{name}</th>
                  <td class="wrap">
                    <code>{value}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </TitledPanel>
    </>
  );
  return page(c, deps, 'deliveries', `Delivery ${view.id}`, body);
}
