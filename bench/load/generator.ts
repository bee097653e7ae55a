/**
 * The load generator's process. It signs its deliveries before timing, drives one target, and sends back
 * its figures; the parent only reads them, so nothing else runs on this event loop while it measures.
 */
import { Client, Pool } from 'undici';
import { exitWithParent } from '../children.ts';
import { DeliveryMaker, type SignedDelivery } from '../deliveries.ts';
import { percentile, Samples } from '../histogram.ts';
import { pacer } from './pace.ts';
import type { BurstSpec, ClosedLoopSpec, LoadMessage, LoadResult, LoadSpec } from './protocol.ts';
import { seededRandom } from '../../test/support/random.ts';

const say = (message: LoadMessage) => process.send!(message);

exitWithParent();
process.once('message', (spec: LoadSpec) => {
  (spec.kind === 'closed' ? closedLoop(spec) : burst(spec)).then(
    (result) => say({ type: 'done', result }),
    (error: unknown) => say({ type: 'failed', message: (error as Error).stack ?? String(error) }),
  );
});

class Tally {
  readonly statuses: Record<string, number> = {};
  readonly decisions: Record<string, number> = {};
  errors = 0;
  firstError: string | null = null;

  record(status: string, text: string): string | undefined {
    this.statuses[status] = (this.statuses[status] ?? 0) + 1;
    if (status !== '200') {
      this.errors++;
      this.firstError ??= `${status}: ${text.slice(0, 300)}`;
      return undefined;
    }
    const decision = decisionOf(text);
    this.decisions[decision] = (this.decisions[decision] ?? 0) + 1;
    return decision;
  }
}

/** The gateway answers `{…,"decision":"…"}`; the echo server answers without one. */
function decisionOf(text: string): string {
  try {
    return (JSON.parse(text) as { decision?: string }).decision ?? '(none)';
  } catch {
    return '(not json)';
  }
}

/**
 * One request through undici's handler API rather than `request()`: no response stream per request, so the
 * generator, which shares the machine's two cores with the gateway it measures, takes less of them.
 */
function send(dispatcher: Pool | Client, path: string, delivery: SignedDelivery): Promise<[string, string]> {
  return new Promise((resolve) => {
    let status = 0;
    const chunks: Buffer[] = [];
    dispatcher.dispatch(
      { path, method: 'POST', headers: delivery.headers, body: delivery.body },
      {
        // Its presence is what tells undici this handler speaks the controller API.
        onRequestStart() {},
        onResponseStart(_, statusCode) {
          status = statusCode;
        },
        onResponseData(_, chunk) {
          chunks.push(chunk);
        },
        onResponseEnd() {
          resolve([String(status), Buffer.concat(chunks).toString('utf8')]);
        },
        onResponseError(_, error) {
          resolve(['error', error.message]);
        },
      },
    );
  });
}

/** Replays are drawn from this many most recent new deliveries, so a long soak does not hold every one it sent. */
const REPLAY_WINDOW = 50_000;

async function closedLoop(spec: ClosedLoopSpec): Promise<LoadResult> {
  const maker = new DeliveryMaker(spec.runId, spec.bodyBytes);
  const presigned: Array<SignedDelivery | undefined> = Array.from({ length: Math.max(1, spec.presign) }, () => maker.make());
  const rng = seededRandom(spec.seed);
  const tally = new Tally();
  const samples = new Samples();
  let signedDuringRun = 0;
  let position = 0;
  let uniques = 0;
  let duplicates = 0;
  // A ring of the latest new deliveries and their positions in the send order.
  const recent = new Array<SignedDelivery>(REPLAY_WINDOW);
  const recentAt = new Float64Array(REPLAY_WINDOW);
  let answered = 0;

  const fresh = (k: number): SignedDelivery => {
    if (spec.cycle) return presigned[k % presigned.length]!;
    if (k < presigned.length) {
      const delivery = presigned[k]!;
      presigned[k] = undefined;
      return delivery;
    }
    signedDuringRun++;
    return maker.make();
  };

  const next = (): SignedDelivery => {
    const at = position++;
    // Only deliveries sent at least `concurrency` positions earlier are replayed: with that many clients
    // every one of them has been answered, so a replay is a sender's retry, not a race.
    while (answered < uniques && recentAt[answered % REPLAY_WINDOW]! <= at - spec.concurrency) answered++;
    const oldest = Math.max(0, uniques - REPLAY_WINDOW);
    if (spec.duplicates > 0 && answered > oldest && rng() < spec.duplicates) {
      duplicates++;
      return recent[(oldest + Math.floor(rng() * (answered - oldest))) % REPLAY_WINDOW]!;
    }
    const k = uniques++;
    const delivery = fresh(k);
    recent[k % REPLAY_WINDOW] = delivery;
    recentAt[k % REPLAY_WINDOW] = at;
    return delivery;
  };

  const pool = new Pool(spec.origin, { connections: spec.concurrency, pipelining: 1 });
  const started = performance.now();
  const windowStart = started + spec.warmupMs;
  const end = windowStart + spec.durationMs;
  let interval: number[] = [];
  let intervalErrors = 0;
  let acceptedInWindow = 0;
  let lastProgress = windowStart;
  let progress: NodeJS.Timeout | undefined;
  const report = () => {
    const now = performance.now();
    const sorted = interval.sort((a, b) => a - b);
    say({
      type: 'progress',
      label: spec.label,
      elapsedMs: now - windowStart,
      perSecond: (sorted.length * 1000) / (now - lastProgress),
      p99Ms: percentile(sorted, 0.99),
      maxMs: sorted.at(-1) ?? Number.NaN,
      errors: intervalErrors,
    });
    interval = [];
    intervalErrors = 0;
    lastProgress = now;
  };

  let cpuFrom: NodeJS.CpuUsage | null = null;
  const opened = setTimeout(() => {
    cpuFrom = process.cpuUsage();
    say({ type: 'window', edge: 'start' });
    progress = setInterval(report, spec.progressMs);
  }, spec.warmupMs);
  let isClosed = false;
  const close = () => {
    if (isClosed) return;
    isClosed = true;
    clearInterval(progress);
    say({ type: 'window', edge: 'end' });
  };
  const closed = setTimeout(close, spec.warmupMs + spec.durationMs);
  const due = spec.ratePerSecond ? pacer(started, spec.ratePerSecond, end) : null;
  const client = async () => {
    while (performance.now() < end) {
      const dueAt = due?.();
      if (dueAt === null) break;
      if (dueAt !== undefined && dueAt > performance.now()) await new Promise((resolve) => setTimeout(resolve, dueAt - performance.now()));
      const delivery = next();
      // Unpaced, the clock starts once the delivery is in hand, so signing one on the fly is not counted.
      const sentAt = dueAt ?? performance.now();
      const [status, text] = await send(pool, spec.path, delivery);
      const answeredAt = performance.now();
      const decision = tally.record(status, text);
      if (answeredAt >= windowStart && answeredAt <= end) {
        if (decision === 'accepted') acceptedInWindow++;
        samples.add(answeredAt - sentAt);
        interval.push(answeredAt - sentAt);
        if (status !== '200') intervalErrors++;
      }
    }
  };
  await Promise.all(Array.from({ length: spec.concurrency }, client));
  clearTimeout(opened);
  clearTimeout(closed);
  close();
  const cpu = process.cpuUsage(cpuFrom ?? undefined);
  await pool.close();

  const latencyMs = samples.summary();
  return {
    label: spec.label,
    completed: samples.count,
    windowMs: spec.durationMs,
    perSecond: (samples.count * 1000) / spec.durationMs,
    acceptedPerSecond: (acceptedInWindow * 1000) / spec.durationMs,
    ...tallied(tally),
    sent: { unique: uniques, duplicates },
    signedDuringRun,
    latencyMs,
    generatorCpu: (cpu.user + cpu.system) / 1000 / (performance.now() - windowStart),
  };
}

function tallied(tally: Tally) {
  return { statuses: tally.statuses, decisions: tally.decisions, errors: tally.errors, firstError: tally.firstError };
}

async function burst(spec: BurstSpec): Promise<LoadResult> {
  const delivery = new DeliveryMaker(spec.runId, spec.bodyBytes).make();
  // One client per request, connected before the clock starts: the storm is then 1000 requests arriving
  // together on open connections, not 1000 TCP handshakes queued behind the listen backlog.
  const clients = Array.from({ length: spec.count }, () => new Client(spec.origin, { keepAliveTimeout: 60_000 }));
  for (let i = 0; i < clients.length; i += 100) {
    await Promise.all(
      clients.slice(i, i + 100).map(async (client) => {
        const response = await client.request({ path: '/healthz', method: 'GET' });
        await response.body.dump();
      }),
    );
  }
  const tally = new Tally();
  const samples = new Samples();
  const started = performance.now();
  const cpuFrom = process.cpuUsage();
  say({ type: 'window', edge: 'start' });
  await Promise.all(
    clients.map(async (client) => {
      const sentAt = performance.now();
      const [status, text] = await send(client, spec.path, delivery);
      samples.add(performance.now() - sentAt);
      tally.record(status, text);
    }),
  );
  const windowMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuFrom);
  say({ type: 'window', edge: 'end' });
  await Promise.all(clients.map((client) => client.close()));
  return {
    label: spec.label,
    completed: samples.count,
    windowMs,
    perSecond: (samples.count * 1000) / windowMs,
    acceptedPerSecond: ((tally.decisions.accepted ?? 0) * 1000) / windowMs,
    ...tallied(tally),
    sent: { unique: 1, duplicates: spec.count - 1 },
    signedDuringRun: 0,
    latencyMs: samples.summary(),
    generatorCpu: (cpu.user + cpu.system) / 1000 / windowMs,
  };
}
