import type { Context } from 'hono';
import { z } from 'zod';
import { pageParams, readQuery } from '../http/input.ts';
import { pausedRoutes } from '../operate/destinations.ts';
import type { Store } from '../store/connect.ts';
import { DECISIONS, TASK_STATES } from '../store/decisions.ts';
import { ATTENTION_STATES } from '../store/operator-rules.ts';
import { attemptChart } from '../store/queries/attempt-series.ts';
import { deliveryChart } from '../store/queries/delivery-series.ts';
import { isUnresolved, summarize, taskStates } from '../store/queries/stats.ts';
import { attentionSql } from '../store/queries/task-filter.ts';
import { RANGES, windowOf, type Range, type Series, type Window } from '../store/queries/time-buckets.ts';
import { Bars, keysOf, StackedBars, Swatch, totalsOf, words } from './chart.tsx';
import type { UiDeps, UiEnv } from './env.ts';
import { duration } from './format.tsx';
import { page } from './layout.tsx';
import { num, Table } from './table.tsx';

const query = pageParams({ range: z.enum(Object.keys(RANGES) as [Range, ...Range[]]).default('hour') });

const RANGE_WORDS: Record<Range, string> = { hour: 'the last hour', day: 'the last day' };
const STEP_WORDS: Record<Range, string> = { hour: 'a bar a minute', day: 'a bar a quarter hour' };

/** The classes in the order a person reads them: what worked, what will be tried again, what needs a look. */
const CLASS_ORDER = ['success', 'lookup_found', 'open', 'retryable', 'not_sent', 'unknown', 'lookup_unanswered', 'lease_expired', 'released', 'rejected', 'refused', 'lookup_absent', 'transform_failed'];
const count = (n: number) => n.toLocaleString('en');

/** A chart's numbers: each key's total, and every bucket that has any, under a disclosure. */
function Numbers({ series, keys, head }: { series: Series; keys: readonly string[]; head: string }) {
  const totals = totalsOf(series, keys);
  const { window } = series;
  const filled = Array.from({ length: window.buckets }, (_, i) => i).filter((i) => keys.some((k) => series.counts[k]![i]! > 0));
  return (
    <>
      <table class="totals">
        <thead>
          <tr>
            <th>{head}</th>
            <th class="num">In {RANGE_WORDS[window.range]}</th>
          </tr>
        </thead>
        <tbody>
          {totals.length === 0 ? (
            <tr>
              <td colspan={2} class="muted">
                none
              </td>
            </tr>
          ) : (
            totals.map(([key, n]) => (
              <tr data-key={key}>
                <td>
                  <Swatch k={key} /> {words(key)}
                </td>
                <td class="num">{count(n)}</td>
              </tr>
            ))
          )}
        </tbody>
      </table>
      {filled.length > 0 ? (
        <details>
          <summary>Per {window.range === 'hour' ? 'minute' : 'quarter hour'} (UTC)</summary>
          <table>
            <thead>
              <tr>
                <th>From</th>
                {keys.map((k) => (
                  <th class="num">{words(k)}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {filled.map((i) => (
                <tr>
                  <td class="nowrap">{new Date(window.since.getTime() + i * window.step * 1000).toISOString().slice(11, 16)}</td>
                  {keys.map((k) => (
                    <td class="num">{count(series.counts[k]![i]!)}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      ) : null}
    </>
  );
}

function Card({ value, label, sub, href, warn }: { value: string; label: string; sub?: string | undefined; href?: string; warn?: boolean }) {
  const body = (
    <>
      <div class="v">{value}</div>
      <div class="k">{label}</div>
      {sub ? <div class="k">{sub}</div> : null}
    </>
  );
  return <div class={`card${warn ? ' warn' : ''}`}>{href ? <a href={href}>{body}</a> : body}</div>;
}

/** The home's charts, one of each per process: they count by increments what came since the last view. */
export interface HomeCharts {
  deliveries: (window: Window) => Promise<Series>;
  attempts: (window: Window) => Promise<Series>;
}

export const homeCharts = (store: Store): HomeCharts => ({ deliveries: deliveryChart(store), attempts: attemptChart(store) });

/**
 * The home page: traffic over the last hour or day (deliveries by decision, attempts by class), the tasks that
 * wait for a person now, and how old the oldest unresolved one is. The queue is counted as the attention page
 * counts it, and the unresolved tasks from the process's task tally, as `/api/stats` does: the same figures.
 */
export async function homePage(c: Context<UiEnv>, deps: UiDeps, charts: HomeCharts) {
  const { range } = readQuery(c, query);
  const { store } = deps;
  const window = await windowOf(store.db, range);
  const heldRoutes = [...(await pausedRoutes(store, deps.config)).sends.keys()];
  const [deliveries, attempts, queue, { tasks }] = await Promise.all([
    charts.deliveries(window),
    charts.attempts(window),
    taskStates(store.db, attentionSql(heldRoutes)),
    deps.tasks(),
  ]);
  const waiting = summarize(queue, () => true);
  const unresolved = summarize(tasks, isUnresolved);
  const decisionKeys = keysOf(deliveries, Object.values(DECISIONS));
  const classKeys = keysOf(attempts, CLASS_ORDER);
  const sum = (series: Series) => Object.values(series.counts).reduce((n, row) => n + row.reduce((a, b) => a + b, 0), 0);
  const inQueue = (state: string) => queue.find((s) => s.state === state);
  const queueRows = ATTENTION_STATES.map((state) => ({ key: state, label: state === 'pending' ? 'pending (held)' : words(state), n: inQueue(state)?.count ?? 0 }));
  const span = RANGE_WORDS[range];

  const body = (
    <>
      <h1>Home</h1>
      <p class="lede">What came in and what went out over {span}, and what waits for a person now. Times are the database's; bars are per {range === 'hour' ? 'minute' : 'quarter hour'}, the last one still filling.</p>
      <nav class="tabs" aria-label="Range">
        {(Object.keys(RANGES) as Range[]).map((r) => (
          <a href={`/ui/home?range=${r}`} class={r === range ? 'here' : undefined} aria-current={r === range ? 'page' : undefined}>
            {RANGE_WORDS[r]}
          </a>
        ))}
      </nav>
      <div class="cards">
        <Card value={count(sum(deliveries))} label={`deliveries in ${span}`} href={`/ui/deliveries`} />
        <Card value={count(sum(attempts))} label={`attempts started in ${span}`} />
        <Card
          value={count(waiting.count)}
          label="need a person now"
          sub={waiting.count ? `oldest ${duration(waiting.oldestAgeSeconds)}` : undefined}
          href="/ui/attention"
          warn={waiting.count > 0}
        />
        <Card
          value={unresolved.count ? duration(unresolved.oldestAgeSeconds) : '—'}
          label="oldest unresolved task"
          sub={`${count(unresolved.count)} unresolved (not succeeded, cancelled or superseded)`}
          href={`/ui/tasks?${new URLSearchParams({ state: Object.values(TASK_STATES).filter(isUnresolved).join(','), order: 'asc' })}`}
        />
      </div>

      <section class="chart-block" aria-labelledby="deliveries-h">
        <h2 id="deliveries-h">Deliveries by decision</h2>
        <div class="chart-row">
          <div class="panel pad">
            <StackedBars
              id="deliveries-chart"
              title={`Deliveries by decision, ${span}`}
              desc={`Stacked bars, ${STEP_WORDS[range]}: each verified receipt by what oncehook decided about it. The table beside gives the totals.`}
              series={deliveries}
              order={Object.values(DECISIONS)}
              noun="deliveries"
            />
          </div>
          <div class="panel numbers" id="deliveries-numbers">
            <Numbers series={deliveries} keys={decisionKeys} head="Decision" />
          </div>
        </div>
      </section>

      <section class="chart-block" aria-labelledby="attempts-h">
        <h2 id="attempts-h">Attempts by outcome class</h2>
        <div class="chart-row">
          <div class="panel pad">
            <StackedBars
              id="attempts-chart"
              title={`Attempts by outcome class, ${span}`}
              desc={`Stacked bars, ${STEP_WORDS[range]}: each send or lookup by the time it started, with its outcome class (open: still in flight). The table beside gives the totals.`}
              series={attempts}
              order={CLASS_ORDER}
              noun="attempts"
            />
          </div>
          <div class="panel numbers" id="attempts-numbers">
            <Numbers series={attempts} keys={classKeys} head="Class" />
          </div>
        </div>
      </section>

      <section class="chart-block" aria-labelledby="queue-h">
        <h2 id="queue-h">Waiting for a person now</h2>
        <div class="chart-row">
          <div class="panel pad">
            <Bars
              id="queue-chart"
              title="Tasks waiting for a person now, by state"
              desc="One bar per state of the attention queue; pending counts only tasks a paused destination holds. The table beside gives the numbers and the oldest of each."
              rows={queueRows}
            />
          </div>
          <div class="panel numbers" id="queue-numbers">
            <Table head={['State', num('Tasks'), num('Oldest')]} class="totals">
              {queueRows.map((row) => (
                <tr data-key={row.key}>
                  <td>
                    <Swatch k={row.key} /> <a href={`/ui/attention?state=${row.key}`}>{row.label}</a>
                  </td>
                  <td class="num">{count(row.n)}</td>
                  <td class="num">{row.n ? duration(inQueue(row.key)?.oldestAgeSeconds ?? null) : '—'}</td>
                </tr>
              ))}
            </Table>
          </div>
        </div>
      </section>
    </>
  );
  return page(c, deps, 'home', 'Home', body);
}
