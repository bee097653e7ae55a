import { Hono } from 'hono';
import type { Config } from '../config/schema.ts';
import { HttpError } from '../errors.ts';
import type { Store } from '../store/connect.ts';
import type { Stats } from '../store/queries/stats.ts';
import { bearerAuth, type AdminEnv } from './auth.ts';
import { databaseDeadline } from './database-deadline.ts';
import { deliveryRoutes } from './deliveries.ts';
import { destinationRoutes } from './destinations.ts';
import { taskRoutes } from './tasks.ts';
import type { AdminTokens } from './tokens.ts';

export interface AdminDeps {
  store: Store;
  config: Config;
  tokens: AdminTokens | null;
  stats: () => Promise<Stats>;
}

/** The admin API under `/api`: behind the bearer tokens, or off (answering why) when none is set. */
export function apiRoutes({ store, config, tokens, stats }: AdminDeps): Hono {
  const app = new Hono<AdminEnv>();
  if (tokens === null) {
    app.all('/api/*', () => {
      throw new HttpError(404, 'admin_api_off', 'the admin API is off: start oncehook with ONCEHOOK_ADMIN_TOKEN set');
    });
    return app as unknown as Hono;
  }
  app.use('/api/*', bearerAuth(tokens), databaseDeadline(config.limits.writeStallMs));
  app.route('/api/deliveries', deliveryRoutes({ store }));
  app.route('/api/tasks', taskRoutes({ store, config }));
  app.route('/api/destinations', destinationRoutes({ store, config }));
  app.get('/api/stats', async (c) => c.json(await stats()));
  return app as unknown as Hono;
}
