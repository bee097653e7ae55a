import type { Context } from 'hono';
import type { UiDeps, UiEnv } from './env.ts';
import { Badge, duration } from './format.tsx';
import { page } from './layout.tsx';
import { num, Table } from './table.tsx';
import { TitledPanel } from './titled-panel.tsx';

function Card({ value, label, sub, warn }: { value: number; label: string; sub?: string; warn?: boolean }) {
  return (
    <div class={`card${warn ? ' warn' : ''}`}>
      <div class="v">{value.toLocaleString('en')}</div>
      <div class="k">{label}</div>
      {sub ? <div class="k">{sub}</div> : null}
    </div>
  );
}

function Tally({ rows, head }: { rows: [string, number][]; head: string }) {
  return (
    <div class="panel">
      <table>
        <thead>
          <tr>
            <th>{head}</th>
            <th class="num">Count</th>
          </tr>
        </thead>
        <tbody>
          {rows.length === 0 ? (
            <tr>
              <td colspan={2} class="muted">
                none yet
              </td>
            </tr>
          ) : (
            rows.map(([key, n]) => (
              <tr>
                <td>
                  <Badge value={key} />
                </td>
                <td class="num">{n.toLocaleString('en')}</td>
              </tr>
            ))
          )}
        </tbody>
      </table>
    </div>
  );
}

/** The figures of /api/stats, read from the database: the same in every instance. */
export async function statsPage(c: Context<UiEnv>, deps: UiDeps) {
  const s = await deps.stats();
  const body = (
    <>
      <h1>Stats</h1>
      <p class="lede">Counted in the database, so every instance shows the same. Unresolved work is every task not succeeded, cancelled or superseded.</p>
      <div class="cards">
        <Card value={s.events} label="events" />
        <Card value={s.deliveries} label="deliveries" />
        <Card value={s.confirmedEffects} label="confirmed effects" />
        <Card value={s.unresolved.count} label="unresolved tasks" sub={s.unresolved.count ? `oldest ${duration(s.unresolved.oldestAgeSeconds)}` : undefined} />
        <Card
          value={s.needsAttention.count}
          label="need a person"
          sub={s.needsAttention.count ? `oldest ${duration(s.needsAttention.oldestAgeSeconds)}` : undefined}
          warn={s.needsAttention.count > 0}
        />
        <Card value={s.pausedDestinations} label="paused destinations" warn={s.pausedDestinations > 0} />
      </div>
      <div class="grid2">
        <div>
          <TitledPanel title="Tasks by state">
            <Table head={['State', num('Count'), num('Oldest')]}>
              {s.tasks.map((row) => (
                <tr>
                  <td>
                    <Badge value={row.state} />
                  </td>
                  <td class="num">{row.count.toLocaleString('en')}</td>
                  <td class="num">{duration(row.oldestAgeSeconds)}</td>
                </tr>
              ))}
            </Table>
          </TitledPanel>
        </div>
        <div>
          <h2>Alert messages by state</h2>
          <p class="muted">Sent to people by the alerts (source <code>_alerts</code>): not among the tasks, nor their effects.</p>
          <Tally head="State" rows={Object.entries(s.alertMessages)} />
        </div>
        <div>
          <h2>Deliveries by decision</h2>
          <Tally head="Decision" rows={Object.entries(s.decisions)} />
        </div>
        <div>
          <h2>Attempts by class</h2>
          <Tally head="Class" rows={Object.entries(s.attempts)} />
        </div>
      </div>
    </>
  );
  return page(c, deps, 'stats', 'Stats', body);
}
