import type { Context } from 'hono';
import { z } from 'zod';
import { blank, pageParams, readQuery } from '../http/input.ts';
import { rejectionsReport, rejectionsSince } from '../operate/rejections.ts';
import type { RejectionTally } from '../store/queries/rejections.ts';
import { ChoiceField } from './choice-field.tsx';
import type { UiDeps, UiEnv } from './env.ts';
import { Time } from './format.tsx';
import { page } from './layout.tsx';
import { num, Table } from './table.tsx';
import { TablePanel, TitledPanel } from './titled-panel.tsx';

const query = pageParams({ source: blank(z.string().max(200)), since: blank(z.string().max(100)) });

const SINCE_CHOICES = ['15m', '1h', '6h', '24h'];

/** The minutes of one pair as a row of counts: a burst shows as a run of busy minutes. */
function Minutes({ tally }: { tally: RejectionTally }) {
  const shown = tally.minutes.slice(-12);
  return (
    <span class="muted">
      {shown.map((m) => `${m.minute.slice(11, 16)} ${m.count}`).join(' · ')}
      {tally.minutes.length > shown.length ? ' (latest 12 minutes with any)' : ''}
    </span>
  );
}

/**
 * Requests ingest refused — a bad signature, a missing header, a body too large — per source and reason, with the
 * latest few of each. Counted, not stored: nothing of a refused request's body or header values is kept.
 */
export async function rejectionsPage(c: Context<UiEnv>, deps: UiDeps) {
  const q = readQuery(c, query);
  const since = q.since ?? '1h';
  const report = await rejectionsReport(deps.store.db, { source: q.source, since: rejectionsSince(since) });
  const body = (
    <>
      <h1>Refused requests</h1>
      <p class="lede">
        Requests answered with an error before anything was recorded, per source and reason: counted per minute for
        {` ${report.kept.minutes / 60} `}hours, with the latest {report.kept.samplesPerReason} of each. No body and no header value is kept.
      </p>
      <form class="filters" method="get" action="/ui/rejections">
        <ChoiceField name="source" label="Source" choices={Object.keys(deps.config.sources)} selected={q.source} />
        <ChoiceField name="since" label="Since" choices={SINCE_CHOICES} selected={since} any={false} words={(choice) => `${choice} ago`} />
        <button type="submit" class="primary">
          Show
        </button>
      </form>
      <div class="panel">
        {report.items.length === 0 ? (
          <div class="empty">No request was refused since {since} ago.</div>
        ) : (
          <Table head={['Source', 'Reason', num('Refused'), 'Per minute']}>
            {report.items.map((tally) => (
              <tr>
                <td>{tally.source}</td>
                <td>
                  <code>{tally.reason}</code>
                </td>
                <td class="num">{tally.total}</td>
                <td class="wrap">
                  <Minutes tally={tally} />
                </td>
              </tr>
            ))}
          </Table>
        )}
      </div>
      <TablePanel
        title="Latest refused"
        head={['When', 'Source', 'Reason', 'From', 'Header names']}
        items={report.items.flatMap((tally) => tally.samples.map((sample) => ({ source: tally.source, sample })))}
        row={({ source, sample }) => (
          <tr>
            <td class="nowrap">
              <Time at={new Date(sample.at)} />
            </td>
            <td>{source}</td>
            <td>
              <code>{sample.reason}</code>
            </td>
            <td>{sample.remoteAddress ?? <span class="muted">—</span>}</td>
            <td class="wrap">
              <code>{sample.headerNames.join(' ')}</code>
            </td>
          </tr>
        )}
      />
    </>
  );
  return page(c, deps, 'rejections', 'Refused requests', body);
}
