import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { Adapter } from '../adapters/types.ts';
import type { Config } from './config/schema.ts';
import { apiRoutes } from './api/routes.ts';
import { ingestRoutes } from './ingest/route.ts';
import type { Logger } from './log.ts';
import type { Metrics } from './metrics.ts';
import { sql } from 'drizzle-orm';
import type { Store } from './store/connect.ts';

export interface AppDeps {
  config: Config;
  adapters: ReadonlyMap<string, Adapter>;
  store: Store;
  logger: Logger;
  metrics: Metrics;
  /** The bearer token of the admin API; unset turns it off. */
  adminToken?: string | undefined;
  /** A worker-only process serves health and metrics, not webhooks or the admin API. */
  role?: Role;
}

/** What a process does: receive (web), forward (worker), or both (all, the default). */
export type Role = 'web' | 'worker' | 'all';

/** The HTTP surface. Every error becomes `{"error":{"code","message"}}` here and nowhere else. */
export function createApp(deps: AppDeps): Hono {
  const app = new Hono();
  if (deps.role !== 'worker') {
    app.route('/', ingestRoutes(deps));
    app.route('/', apiRoutes({ store: deps.store, adminToken: deps.adminToken }));
  }

  app.get('/healthz', (c) => c.json({ ok: true }));
  app.get('/readyz', async (c) => {
    try {
      await deps.store.db.execute(sql`select 1`);
      return c.json({ ok: true, database: 'reachable' });
    } catch {
      return c.json({ ok: false, database: 'unreachable' }, 503);
    }
  });
  app.get('/metrics', async (c) =>
    c.text(await deps.metrics.registry.metrics(), 200, { 'content-type': deps.metrics.registry.contentType }),
  );

  app.notFound((c) => c.json({ error: { code: 'not_found', message: `no route for ${c.req.method} ${c.req.path}` } }, 404));
  app.onError((error, c) => {
    if (error instanceof HTTPException) return error.getResponse();
    deps.logger.error({ err: error, path: c.req.path }, 'unhandled error');
    return c.json({ error: { code: 'internal', message: 'an internal error occurred; it has been logged' } }, 500);
  });
  return app;
}
