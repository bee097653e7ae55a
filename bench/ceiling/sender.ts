/**
 * The forwarding ceiling's sender: the requests oncehook's worker sends for its tasks (the same headers, the same
 * bodies, as many in flight on as many keep-alive connections) from a bare undici pool, with no queue and no
 * database behind it. Nothing is claimed, recorded or finished, so no forwarder that keeps a record of its work
 * passes this rate on the same machine.
 */
import { Pool } from 'undici';
import { exitWithParent } from '../children.ts';
import { orderBody } from '../deliveries.ts';
import { Samples } from '../histogram.ts';
import type { CeilingFigures, CeilingMessage, CeilingSpec } from './protocol.ts';

const say = (message: CeilingMessage) => process.send!(message);

exitWithParent();
process.once('message', (spec: CeilingSpec) => {
  send(spec).then(
    (figures) => say({ type: 'done', figures }),
    (error: unknown) => say({ type: 'failed', message: (error as Error).stack ?? String(error) }),
  );
});

interface Outgoing {
  headers: Record<string, string>;
  body: Buffer;
}

/** A task's send as oncehook's worker writes it (src/forward/request.ts), built before the clock starts. */
function taskRequest(i: number, bodyBytes: number): Outgoing {
  const id = `t_${i.toString(16).padStart(32, '0')}`;
  return {
    headers: {
      'user-agent': 'oncehook',
      'idempotency-key': id,
      'oncehook-task-id': id,
      'oncehook-attempt': '1',
      'oncehook-event-id': String(i),
      'oncehook-source': 'shop',
      'oncehook-topic': 'orders/create',
      'content-type': 'application/json',
    },
    body: Buffer.from(orderBody(String(i), bodyBytes)),
  };
}

async function send(spec: CeilingSpec): Promise<CeilingFigures> {
  const requests = Array.from({ length: 1000 }, (_, i) => taskRequest(i, spec.bodyBytes));
  const pool = new Pool(spec.origin, { connections: spec.inFlight });
  const samples = new Samples();
  let next = 0;
  let errors = 0;
  const started = performance.now();
  const windowStart = started + spec.warmupMs;
  const end = windowStart + spec.durationMs;
  const opened = setTimeout(() => say({ type: 'window', edge: 'start' }), spec.warmupMs);
  await Promise.all(
    Array.from({ length: spec.inFlight }, async () => {
      while (performance.now() < end) {
        const request = requests[next++ % requests.length]!;
        const sentAt = performance.now();
        let ok = false;
        try {
          const response = await pool.request({ path: '/crm', method: 'POST', headers: request.headers, body: request.body });
          await response.body.dump();
          ok = response.statusCode < 300;
        } catch {
          // Counted below: a refused connection answers fastest of all, and must not pass for a forwarded request.
        }
        const answeredAt = performance.now();
        if (!ok) errors++;
        else if (answeredAt >= windowStart && answeredAt <= end) samples.add(answeredAt - sentAt);
      }
    }),
  );
  clearTimeout(opened);
  say({ type: 'window', edge: 'end' });
  await pool.close();
  return { completed: samples.count, perSecond: (samples.count * 1000) / spec.durationMs, errors, latencyMs: samples.summary() };
}
