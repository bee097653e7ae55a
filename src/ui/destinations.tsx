import type { Context } from 'hono';
import { destinations, type DestinationWithUse } from '../operate/destinations.ts';
import { originUses } from '../operate/explain.ts';
import { ReadOnlyNote } from './decide-forms.tsx';
import type { UiDeps, UiEnv } from './env.ts';
import { Badge, Time } from './format.tsx';
import { Csrf, page } from './layout.tsx';
import { Table } from './table.tsx';

function limitWords(limit: NonNullable<DestinationWithUse['limit']>, tokens: number | null): string {
  const rate = limit.perSecond === null ? null : `${limit.perSecond}/s, burst ${limit.burst}${tokens === null ? '' : ` (${Math.floor(tokens)} left)`}`;
  const flight = limit.maxInFlight === null ? null : `${limit.maxInFlight} at once`;
  return [rate, flight].filter(Boolean).join(' · ');
}

/** Each downstream origin's standing, and the way out of a pause once its credentials are fixed. */
export async function destinationsPage(c: Context<UiEnv>, deps: UiDeps) {
  const items = await destinations(deps.store, deps.config, 'with use');
  const body = (
    <>
      <h1>Destinations</h1>
      <p class="lede">
        A destination cools down after a 429 or 503 and is paused after a 401 or 403 until a person resumes it. Tasks that failed on the
        refusal stay failed: retry them from the attention queue. A destination with limits gets no more requests a second, and no
        more at once, than its limits allow, from all instances together; its other tasks wait, pending.
      </p>
      <div class="panel">
        <Table head={['Origin', 'Status', 'Actions', 'Limits', 'In flight', 'Waiting', 'Why', 'Since / until', 'Resume']}>
          {items.map((d) => (
            <tr>
              <td>
                <code class="id">{d.origin}</code>
              </td>
              <td>
                <Badge value={d.status} />
              </td>
              <td class="wrap">{originUses(d) || <span class="muted">none configured</span>}</td>
              <td class="nowrap">{d.limit ? limitWords(d.limit, d.tokens) : <span class="muted">none</span>}</td>
              <td>
                {d.inFlight}
                {d.limit?.maxInFlight ? <span class="muted"> / {d.limit.maxInFlight}</span> : null}
              </td>
              <td>
                {d.waiting}
                {d.waitingLookups > 0 ? <span class="muted"> + {d.waitingLookups} lookups</span> : null}
              </td>
              <td class="wrap err">{d.pausedReason ?? ''}</td>
              <td class="nowrap">{d.status === 'paused' ? <Time at={d.pausedAt} /> : d.status === 'cooling' ? <Time at={d.cooldownUntil} /> : <span class="muted">—</span>}</td>
              <td>
                {d.status === 'paused' && c.get('readOnly') ? (
                  <ReadOnlyNote inline />
                ) : d.status === 'paused' ? (
                  <form class="inline" method="post" action="/ui/destinations/resume">
                    <Csrf token={c.get('csrf')} />
                    <input type="hidden" name="origin" value={d.origin} />
                    <input name="note" required placeholder="note: what was fixed" maxlength={2000} aria-label={`note for ${d.origin}`} />
                    <button type="submit" class="primary">
                      Resume
                    </button>
                  </form>
                ) : (
                  <span class="muted">—</span>
                )}
              </td>
            </tr>
          ))}
        </Table>
      </div>
    </>
  );
  return page(c, deps, 'destinations', 'Destinations', body);
}
