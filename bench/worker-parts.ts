/**
 * What each part of a task's path through the worker costs alone, in µs of this process's CPU a task: the same
 * functions the forwarder runs, each in a loop over the same task. What the drain costs beyond their sum is the
 * claim and the finish (postgres.js, the group commit), the loop, the timers and what garbage they all leave.
 */
import type { ClaimedTask } from '../src/store/atomic/claim.ts';
import type { WorkerModules } from './worker-cost.ts';

const LOOPS = 5;

/** µs of CPU a call of `part`, over `n` calls, the median of LOOPS loops; the first loop warms it and is dropped. */
async function cost(n: number, part: (i: number) => unknown): Promise<number> {
  const perCall: number[] = [];
  for (let loop = 0; loop <= LOOPS; loop++) {
    const started = process.cpuUsage();
    for (let i = 0; i < n; i++) {
      await part(i);
      // A turn of the event loop now and then, as the forwarder's has: what a part leaves to it (a log block's write) is counted.
      if (i % 64 === 63) await new Promise((resolve) => setImmediate(resolve));
    }
    const used = process.cpuUsage(started);
    if (loop > 0) perCall.push((used.user + used.system) / n);
  }
  return perCall.sort((a, b) => a - b)[Math.floor(perCall.length / 2)]!;
}

export async function partCosts(m: WorkerModules, config: ReturnType<WorkerModules['configSchema']['parse']>, body: string): Promise<[string, number][]> {
  const routes = new m.Routes(config, 30_000);
  const route = routes.get('shop', 'crm');
  const task = (i: number): ClaimedTask => ({
    id: `t_worker_parts_${i}`,
    source: 'shop',
    action: 'crm',
    eventId: `e_${i}`,
    topic: 'orders/create',
    body: Buffer.from(body),
    contentType: 'application/json',
    attempts: 1,
    lookups: 0,
    mode: 'send',
    attemptId: i,
    reason: null,
    priorState: 'pending',
  });
  const tasks = Array.from({ length: 2000 }, (_, i) => task(i));
  const n = tasks.length;
  const pools = new m.Pools(64);
  const pool = pools.for(route.destination, route.config.timeoutMs);
  const answered = await m.exchange(pool, m.sendRequest(tasks[0]!, route));
  if (answered.kind !== 'answer') throw new Error(`the downstream did not answer: ${answered.error.message}`);
  const verdict = m.classifySend(answered, route.config.referencePointer, route.mask);
  const decision = m.decide(verdict, tasks[0]!, route);
  const metrics = m.createMetrics();
  const pino = (await import('pino')).default;
  const logger = m.createLogger('info', pino.destination({ dest: '/dev/null', sync: false, minLength: 4096 }));
  const inFlight = 64;
  const request = await cost(n, (i) => m.sendRequest(tasks[i]!, route));
  // Each exchange needs its request: what building it costs is taken off.
  const exchanged = await cost(n / inFlight, (i) =>
    Promise.all(Array.from({ length: inFlight }, (_, j) => m.exchange(pool, m.sendRequest(tasks[(i * inFlight + j) % n]!, route)))),
  );
  const parts: [string, number][] = [
    ['the request: headers, URL, body', request],
    [`the HTTP exchange, ${inFlight} in flight (undici)`, exchanged / inFlight - request],
    ['classify, decide, the body\'s hash', await cost(n, (i) => {
      const v = m.classifySend(answered, route.config.referencePointer, route.mask);
      m.decide(v, tasks[i]!, route);
      return m.sha256Hex(tasks[i]!.body);
    })],
    ['metrics: two counters and a histogram', await cost(n, (i) => {
      const t = tasks[i]!;
      metrics.forwardAttempts.inc({ source: t.source, action: t.action, class: verdict.class });
      metrics.forwardSeconds.observe({ source: t.source, action: t.action, kind: t.mode }, 0.002);
      metrics.taskTransitions.inc({ source: t.source, action: t.action, state: decision.state });
    })],
    ['the log line', await cost(n, (i) => {
      const t = tasks[i]!;
      logger.info(
        { task: t.id, source: t.source, action: t.action, kind: t.mode, attempt: t.attempts, class: verdict.class, status: verdict.status, next: decision.state, error: undefined },
        decision.decision,
      );
    })],
  ];
  await pools.close();
  return parts;
}
