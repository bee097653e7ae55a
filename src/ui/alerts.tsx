import type { Context } from 'hono';
import { alertMessages, alertsOf, queueTestAlert } from '../operate/alerts.ts';
import { ReadOnlyNote } from './decide-forms.tsx';
import type { UiDeps, UiEnv } from './env.ts';
import { redirectWithFlash } from './flash.ts';
import { Badge, Id, Time } from './format.tsx';
import { taskHref } from './hrefs.ts';
import { Csrf, page } from './layout.tsx';
import { Table } from './table.tsx';
import { TitledPanel } from './titled-panel.tsx';

/** Each alert, where its conditions stand, and the messages it sent, with their delivery. */
export async function alertsPage(c: Context<UiEnv>, deps: UiDeps) {
  const [alerts, messages] = await Promise.all([alertsOf(deps.store, deps.config), alertMessages(deps.store, { limit: 50, order: 'desc' })]);
  const body = (
    <>
      <h1>Alerts</h1>
      <p class="lede">
        Messages to people about the work that waits for them: one when a condition opens, more while it stays open (at most one per
        minimum interval, with a count), and one when it clears. They go out as tasks, retried and in the run ledger.
      </p>
      <div class="panel">
        {alerts.length === 0 ? (
          <div class="empty">No alert is configured: add "alerts" to the config (see docs/operating.md).</div>
        ) : (
          <Table head={['Alert', 'Sent to', 'Conditions', 'Test']}>
            {alerts.map((alert) => (
              <tr>
                <td>{alert.name}</td>
                <td class="nowrap">
                  {alert.format} · <code>{alert.destination}</code>
                </td>
                <td class="wrap">
                  {alert.conditions.map((condition) => (
                    <span>
                      {condition.condition} <Badge value={condition.open ? 'open' : 'clear'} />{' '}
                    </span>
                  ))}
                </td>
                <td>
                  {c.get('readOnly') ? (
                    <ReadOnlyNote inline />
                  ) : (
                    <form class="inline" method="post" action={`/ui/alerts/${encodeURIComponent(alert.name)}/test`}>
                      <Csrf token={c.get('csrf')} />
                      <button type="submit">Send a test</button>
                    </form>
                  )}
                </td>
              </tr>
            ))}
          </Table>
        )}
      </div>

      <TitledPanel title="Messages">
        {messages.items.length === 0 ? (
          <div class="empty">No message yet.</div>
        ) : (
          <Table head={['Message', 'Made', 'Alert', 'Type', 'Condition', 'Delivery', 'Last error']}>
            {messages.items.map((m) => (
              <tr>
                <td>
                  <Id value={m.id} href={taskHref(m.id)} />
                </td>
                <td class="nowrap">
                  <Time at={m.createdAt} />
                </td>
                <td>{m.alert}</td>
                <td>{m.type}</td>
                <td>{m.condition}</td>
                <td>
                  <Badge value={m.state} />
                </td>
                <td class="wrap err">{m.lastError ?? ''}</td>
              </tr>
            ))}
          </Table>
        )}
      </TitledPanel>
    </>
  );
  return page(c, deps, 'alerts', 'Alerts', body);
}

export async function testAlertFromForm(c: Context<UiEnv>, deps: UiDeps): Promise<Response> {
  const name = c.req.param('name') ?? '';
  const id = await queueTestAlert(deps.store, deps.config, name, c.get('actor'));
  if (id === null) return redirectWithFlash(c, '/ui/alerts', { kind: 'error', text: `No alert "${name}" is configured.` });
  return redirectWithFlash(c, '/ui/alerts', { kind: 'ok', text: `A test message of ${name} is on its way (${id}).` });
}
