/**
 * What each part of a task's path through the worker costs alone, in µs of this process's CPU a task: the same
 * functions the forwarder runs, each in a loop over the same task. What the drain costs beyond their sum is the
 * claim and the finish (postgres.js, the group commit), the loop, the timers and what garbage they all leave.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ClaimedTask } from '../src/store/atomic/claim.ts';

/** The modules of a task's path through the worker, by where they lie under a checkout's src/. */
const MODULES = {
  forwarder: 'forward/forwarder',
  log: 'log',
  metrics: 'metrics',
  schema: 'config/schema',
  routes: 'forward/routes',
  pools: 'forward/pools',
  exchange: 'forward/exchange',
  request: 'forward/request',
  classify: 'forward/classify',
  decide: 'forward/decide',
  ids: 'ids',
} as const;

interface Loaded {
  forwarder: typeof import('../src/forward/forwarder.ts');
  log: typeof import('../src/log.ts');
  metrics: typeof import('../src/metrics.ts');
  schema: typeof import('../src/config/schema.ts');
  routes: typeof import('../src/forward/routes.ts');
  pools: typeof import('../src/forward/pools.ts');
  exchange: typeof import('../src/forward/exchange.ts');
  request: typeof import('../src/forward/request.ts');
  classify: typeof import('../src/forward/classify.ts');
  decide: typeof import('../src/forward/decide.ts');
  ids: typeof import('../src/ids.ts');
}

/**
 * A checkout's worker modules bundled as `npm run build` bundles the gateway (this checkout's bundle.config.ts), into
 * `<checkout>/dist/worker-parts/`, where the dependencies the build leaves outside resolve from the checkout's own
 * node_modules. The build itself is one bundle whose modules cannot be imported one by one; through tsx, every
 * function would also carry the name-keeping calls tsx adds, which the build has not.
 */
export async function bundleWorkerModules(checkout: string): Promise<string> {
  const root = resolve(checkout);
  const outDir = join(root, 'dist', 'worker-parts');
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const entry = join(outDir, 'entry.ts');
  writeFileSync(entry, Object.entries(MODULES).map(([name, path]) => `export * as ${name} from ${JSON.stringify(join(root, 'src', `${path}.ts`))};\n`).join(''));
  const [{ build }, { default: config }] = await Promise.all([import('vite'), import('../bundle.config.ts')]);
  await build({
    ...config,
    configFile: false,
    root,
    logLevel: 'warn',
    build: { ...config.build, outDir, emptyOutDir: false, rolldownOptions: { ...config.build?.rolldownOptions, input: { 'worker-modules': entry } } },
  });
  return pathToFileURL(join(outDir, 'worker-modules.js')).href;
}

/** The forwarder and what it runs: this checkout's sources through tsx, or a bundle `bundleWorkerModules` made. */
export async function workerModules(bundle?: string) {
  const m: Loaded =
    bundle === undefined
      ? (Object.fromEntries(await Promise.all(Object.entries(MODULES).map(async ([name, path]) => [name, await import(`../src/${path}.ts`)]))) as Loaded)
      : ((await import(bundle)) as Loaded);
  return {
    Forwarder: m.forwarder.Forwarder,
    createLogger: m.log.createLogger,
    createMetrics: m.metrics.createMetrics,
    configSchema: m.schema.configSchema,
    Routes: m.routes.Routes,
    Pools: m.pools.Pools,
    exchange: m.exchange.exchange,
    sendRequest: m.request.sendRequest,
    classifySend: m.classify.classifySend,
    decide: m.decide.decide,
    sha256Hex: m.ids.sha256Hex,
  };
}
export type WorkerModules = Awaited<ReturnType<typeof workerModules>>;

/** The bench's action: one keyed action on the downstream. */
export const partsConfig = (m: WorkerModules, origin: string) =>
  m.configSchema.parse({ sources: { shop: { adapter: 'shopify', secrets: ['bench'], actions: { crm: { url: `${origin}/crm`, idempotency: 'key' } } } } });

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

/** Each part's µs of CPU a task, against the downstream at `origin`, for a task of `body`. */
export async function partCosts(m: WorkerModules, origin: string, body: string): Promise<[string, number][]> {
  const routes = new m.Routes(partsConfig(m, origin), 30_000);
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
    claim: i,
    reason: null,
    priorState: 'pending',
    requestUrl: null,
    lookupUrl: null,
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
