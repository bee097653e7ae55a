import { Hono } from 'hono';
import { HttpError } from '../errors.ts';
import type { Store } from '../store/connect.ts';
import { bearerAuth } from './auth.ts';
import { taskRoutes } from './tasks.ts';

/** The admin API under `/api`: behind the bearer token, or off (answering why) when no token is set. */
export function apiRoutes({ store, adminToken }: { store: Store; adminToken: string | undefined }): Hono {
  const app = new Hono();
  if (adminToken === undefined || adminToken === '') {
    app.all('/api/*', () => {
      throw new HttpError(404, 'admin_api_off', 'the admin API is off: start oncehook with ONCEHOOK_ADMIN_TOKEN set');
    });
    return app;
  }
  app.use('/api/*', bearerAuth(adminToken));
  app.route('/api/tasks', taskRoutes({ store }));
  return app;
}
