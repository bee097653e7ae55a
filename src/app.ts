import { Hono, type Context, type Handler, type MiddlewareHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { Adapter } from '../adapters/types.ts';
import type { Config } from './config/schema.ts';
import { configVersion } from './config/version.ts';
import { requestId } from 'hono/request-id';
import { apiRoutes } from './api/routes.ts';
import { unavailableAnswer } from './http/database-deadline.ts';
import { ready } from './http/readiness.ts';
import { requestLog } from './http/request-log.ts';
import { SignInThrottle } from './http/sign-in-throttle.ts';
import { AdminTokens, type AdminTokenSetting } from './http/tokens.ts';
import { queueOf } from './operate/destinations.ts';
import { ingestRoutes } from './ingest/route.ts';
import { Transforms } from './shape/transforms.ts';
import type { SignatureFailureLog } from './alerts/signature-failures.ts';
import type { RejectionLog } from './store/rejection-log.ts';
import type { Logger } from './log.ts';
import { observeStore, type Metrics } from './metrics.ts';
import type { Store } from './store/connect.ts';
import { statsReader } from './store/queries/stats.ts';
import { taskTally, type TaskTally } from './store/queries/task-tally.ts';
import { receiptWriter, type ReceiptWriter } from './ingest/receipt-writer.ts';
import { Admission } from './ingest/admission.ts';
import type { Reload } from './config/reload.ts';
import type { UiDeps } from './ui/env.ts';

export interface AppDeps {
  config: Config;
  adapters: ReadonlyMap<string, Adapter>;
  store: Store;
  logger: Logger;
  metrics: Metrics;
  /** The bearer token(s) of the admin API and dashboard, by label; unset turns both off. */
  adminToken?: AdminTokenSetting | undefined;
  /** A worker-only process serves health and metrics, not webhooks or the admin API. */
  role?: Role;
  /** Whether this process's own worker loop is turning; undefined where the process runs none. */
  workerAlive?: () => boolean | undefined;
  /** Where ingest counts the deliveries it answers 401, for the signature_failures alert. */
  signatureFailures?: SignatureFailureLog | null;
  /** Where ingest counts the requests it refuses, for people to read (`/api/rejections`). */
  rejections?: RejectionLog | null;
  /** What the process keeps across reloads (`appLasting`). */
  lasting: AppLasting;
  /** `POST /api/config/reload`: absent where the gateway was given no file to read again. */
  reload?: Reload | undefined;
}

/** What a process keeps across reloads: each app made for a config shares these, and /metrics observes them once. */
export interface AppLasting {
  writer: ReceiptWriter;
  /** One task tally for /metrics and the stats views: each keeps counts it has read, so one is enough. */
  tasks: () => Promise<TaskTally>;
  /** A reload must not hand a guesser of admin tokens a fresh allowance. */
  throttle: SignInThrottle;
  /** Nor a source a fresh burst, nor the requests the replaced app still holds a pass past the caps. */
  admission: Admission;
}

export function appLasting(store: Store, logger: Logger, metrics: Metrics, config: () => Config): AppLasting {
  const tasks = taskTally(store);
  observeStore(metrics, store, tasks, () => queueOf(store, config()));
  return { writer: receiptWriter(store, logger, config().limits.writeStallMs), tasks, throttle: new SignInThrottle(logger), admission: new Admission() };
}

/**
 * On every answer, errors and 404s included: a browser reads each as the type it says. An echoed handshake challenge
 * (Meta's `hub.challenge`, sent back as it came) is text a stranger chose, and sniffed as HTML it would run as a page
 * of this origin. Set on the answer as it is, after everything else, as a thrown answer is a Response of its own.
 */
const noSniff: MiddlewareHandler = async (c, next) => {
  await next();
  c.res.headers.set('x-content-type-options', 'nosniff');
};

/** What a process does: receive (web), forward (worker), or both (all, the default). */
export type Role = 'web' | 'worker' | 'all';

/** The HTTP surface. Every error becomes `{"error":{"code","message"}}` here and nowhere else. */
/**
 * The dashboard's pages, loaded when a page is first asked for (or when the gateway, answering, warms them:
 * `loadDashboard`). Their modules are the largest part of the gateway's: loaded before the first answer, they were
 * ~0.4 s of a new gateway's start, which ingest and /readyz never needed. The pages answer errors themselves.
 */
function lazyDashboard(deps: UiDeps): Handler {
  let pages: Promise<Hono> | undefined;
  return async (c) => {
    pages ??= loadDashboard().then(({ uiRoutes }) => new Hono().route('/ui', uiRoutes(deps)));
    return (await pages).fetch(c.req.raw, c.env);
  };
}

/** The dashboard's modules: imported once in a process, whichever asks first. */
export const loadDashboard = () => import('./ui/routes.tsx');

export function createApp(deps: AppDeps): Hono {
  const app = new Hono();
  app.use(noSniff, requestId(), requestLog(deps.logger));
  const { tasks, throttle, writer } = deps.lasting;
  const queue = () => queueOf(deps.store, deps.config);
  const version = configVersion(deps.config);
  if (deps.role !== 'worker') {
    // Compiled once, for ingest, which shapes each new task, and for a person's retry, which shapes a failed one again.
    const transforms = new Transforms(deps.config);
    const tokens = deps.adminToken === undefined ? null : new AdminTokens(deps.adminToken);
    const admin = {
      store: deps.store,
      config: deps.config,
      tokens: tokens?.empty ? null : tokens,
      stats: statsReader(deps.store, tasks, queue),
      tasks,
      throttle,
      transforms,
      reload: deps.reload,
      configVersion: version,
    };
    app.route('/', ingestRoutes({ ...deps, transforms, writer, admission: deps.lasting.admission.for(deps.config) }));
    app.route('/', apiRoutes(admin));
    const dashboard = lazyDashboard({ ...admin, logger: deps.logger });
    app.all('/ui', dashboard);
    app.all('/ui/*', dashboard);
  }

  app.get('/healthz', (c) => c.json({ ok: true }));
  app.get('/readyz', (c) => ready(c, deps.store, deps.workerAlive?.(), deps.config.limits.writeStallMs, version));
  app.get('/metrics', async (c) =>
    c.text(await deps.metrics.registry.metrics(), 200, { 'content-type': deps.metrics.registry.contentType }),
  );

  // A person who opens the bare address, or sends deliveries to a worker, learns where things are.
  const routes =
    deps.role === 'worker'
      ? 'this process runs --role worker: it forwards tasks and serves /healthz, /readyz and /metrics; deliveries, the admin API and the dashboard are on the web processes'
      : 'oncehook serves POST /in/{source} for deliveries, /api/… and the dashboard at /ui (with ONCEHOOK_ADMIN_TOKEN set), /healthz, /readyz and /metrics';
  app.notFound((c) => c.json({ error: { code: 'not_found', message: `no route for ${c.req.method} ${c.req.path}; ${routes}` } }, 404));
  // A thrown answer is a Response of its own, without the X-Request-Id set before the throw, which a refused
  // sender or operator quotes. Set on it as it is: rebuilt around its body stream, it went out chunked instead
  // of with its length.
  const answerOn = (c: Context, thrown: HTTPException) => {
    const answer = thrown.getResponse();
    answer.headers.set('x-request-id', c.get('requestId'));
    return answer;
  };
  app.onError((error, c) => {
    if (error instanceof HTTPException) return answerOn(c, error);
    const unavailable = unavailableAnswer(error);
    if (unavailable) {
      deps.logger.warn({ err: error, path: c.req.path }, 'the database could not be reached for a request');
      return answerOn(c, unavailable);
    }
    deps.logger.error({ err: error, path: c.req.path }, 'unhandled error');
    return c.json({ error: { code: 'internal', message: 'an internal error occurred; it has been logged' } }, 500);
  });
  return app;
}
