import { Hono, type MiddlewareHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { databaseDeadline, unavailableAnswer } from '../http/database-deadline.ts';
import { HttpError } from '../errors.ts';
import { decideFromForm, resumeFromForm } from './actions.ts';
import { alertsPage, testAlertFromForm } from './alerts.tsx';
import { attentionPage } from './attention.tsx';
import { bulkDryRunPage, bulkFromForm } from './bulk.tsx';
import { configPage, tryFromForm } from './config.tsx';
import { deliveriesPage, deliveryPage } from './deliveries.tsx';
import { destinationsPage } from './destinations.tsx';
import type { UiDeps, UiEnv } from './env.ts';
import { formLimit } from './form-limit.tsx';
import { refuseReadOnly, requireCsrf, requireSession } from './guard.tsx';
import { homeCharts, homePage } from './home.tsx';
import { deliveryHref, taskHref } from './hrefs.ts';
import { Problem } from './layout.tsx';
import { loginRoutes, logout } from './login.tsx';
import { rejectionsPage } from './rejections.tsx';
import { statsPage } from './stats.tsx';
import { STYLESHEET } from './styles.ts';
import { taskPage } from './task.tsx';
import { tasksPage } from './tasks.tsx';

/** No scripts at all, styles only from us, forms only to us, never framed (nosniff is the whole app's: src/app.ts). */
const securityHeaders: MiddlewareHandler = async (c, next) => {
  await next();
  c.header('content-security-policy', "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
  c.header('referrer-policy', 'same-origin');
  if (!c.res.headers.has('cache-control')) c.header('cache-control', 'no-store');
};

/** The dashboard under `/ui`: server-rendered pages over the same queries and decisions as the admin API. */
export function uiRoutes(deps: UiDeps): Hono {
  const app = new Hono<UiEnv>();
  app.use('*', securityHeaders);
  app.get('/style.css', (c) => c.body(STYLESHEET, 200, { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=300' }));

  const { tokens } = deps;
  if (tokens === null) {
    app.all('*', (c) => c.html(<Problem status={404} message="The dashboard is off: start oncehook with ONCEHOOK_ADMIN_TOKEN set." />, 404));
    return app as unknown as Hono;
  }

  app.route('/', loginRoutes(tokens, deps.throttle));
  const deadline = databaseDeadline(deps.config.limits.writeStallMs);
  app.use('*', requireSession(tokens, deps.throttle), formLimit, requireCsrf, refuseReadOnly, (c, next) =>
    // A bulk decision waits for its statement as the API's does: a 503 while it still commits would invite pressing
    // again, and a second bulk replay is more effects. Its dry run, which changes nothing, keeps the deadline. A
    // config tried on thousands of deliveries runs their transforms: long, and only reading.
    c.req.method === 'POST' && (c.req.path.startsWith('/ui/tasks/bulk/') || c.req.path === '/ui/config/try') ? next() : deadline(c, next),
  );
  app.post('/logout', (c) => logout(c));

  app.get('/', (c) => c.redirect('/ui/home', 303));
  const charts = homeCharts(deps.store);
  app.get('/home', (c) => homePage(c, deps, charts));
  app.get('/attention', (c) => attentionPage(c, deps));
  app.get('/deliveries', (c) => deliveriesPage(c, deps));
  app.get('/deliveries/:id', (c) => deliveryPage(c, deps));
  app.get('/rejections', (c) => rejectionsPage(c, deps));
  app.get('/tasks', (c) => tasksPage(c, deps));
  // Before `/tasks/:id/…`, which would take "bulk" for a task ID (they start with t_).
  app.get('/tasks/bulk/:kind{retry|replay}', (c) => bulkDryRunPage(c, deps, c.req.param('kind') as 'retry' | 'replay'));
  app.post('/tasks/bulk/:kind{retry|replay}', (c) => bulkFromForm(c, deps, c.req.param('kind') as 'retry' | 'replay'));
  app.get('/tasks/:id', (c) => taskPage(c, deps));
  app.post('/tasks/:id/:kind{approve|resolve|retry|cancel|replay|assign}', (c) =>
    decideFromForm(c, deps, c.req.param('kind') as 'approve' | 'resolve' | 'retry' | 'cancel' | 'replay' | 'assign'),
  );
  app.get('/stats', (c) => statsPage(c, deps));
  app.get('/destinations', (c) => destinationsPage(c, deps));
  app.post('/destinations/resume', (c) => resumeFromForm(c, deps));
  app.get('/alerts', (c) => alertsPage(c, deps));
  app.get('/config', (c) => configPage(c, deps));
  app.post('/config/try', (c) => tryFromForm(c, deps));
  app.post('/alerts/:name/test', (c) => testAlertFromForm(c, deps));
  // The header's jump box: a task or a receipt by its ID.
  app.get('/go', (c) => {
    const id = (c.req.query('id') ?? '').trim();
    if (id.startsWith('t_')) return c.redirect(taskHref(id), 303);
    if (id.startsWith('d_')) return c.redirect(deliveryHref(id), 303);
    return c.redirect(`/ui/deliveries?${new URLSearchParams({ eventId: id })}`, 303);
  });

  // A catch-all rather than notFound: a mounted sub-app's notFound is not consulted by the parent.
  app.all('*', (c) => c.html(<Problem status={404} message={`There is no dashboard page at ${c.req.path}.`} />, 404));
  app.onError((error, c) => {
    const known = error instanceof HTTPException ? error : unavailableAnswer(error);
    if (known) {
      const status = known.status;
      const message = known instanceof HttpError ? known.message : 'The request could not be handled.';
      return c.html(<Problem status={status} message={message} />, status as 400);
    }
    deps.logger.error({ err: error, path: c.req.path }, 'unhandled error in the dashboard');
    return c.html(<Problem status={500} message="An internal error occurred; it has been logged." />, 500);
  });
  return app as unknown as Hono;
}
