import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Config } from '../config/schema.ts';
import { HttpError } from '../errors.ts';
import { bearerAuth, type AdminEnv } from '../http/auth.ts';
import { databaseDeadline } from '../http/database-deadline.ts';
import type { SignInThrottle } from '../http/sign-in-throttle.ts';
import type { AdminTokens } from '../http/tokens.ts';
import type { Transforms } from '../shape/transforms.ts';
import type { Store } from '../store/connect.ts';
import type { Stats } from '../store/queries/stats.ts';
import type { Reload } from '../config/reload.ts';
import { alertRoutes } from './alerts.ts';
import { configRoutes } from './config-routes.ts';
import { instanceRoutes } from './instances.ts';
import { deliveryRoutes } from './deliveries.ts';
import { destinationRoutes } from './destinations.ts';
import { rejectionRoutes } from './rejections.ts';
import { taskRoutes } from './tasks.ts';

export interface AdminDeps {
  store: Store;
  config: Config;
  tokens: AdminTokens | null;
  stats: () => Promise<Stats>;
  /** Shared with the dashboard's sign-in: guesses at either count against one budget. */
  throttle: SignInThrottle;
  /** The actions' transforms, which a retry of a task whose transform failed computes again. */
  transforms: Transforms;
  configVersion: string;
  /** Reads the config file again and swaps it in; absent where the gateway was given no file. */
  reload?: Reload | undefined;
}

/** The API's bodies are a note, a reference, a filter: a larger one is refused before it is read whole. */
export const API_BODY_BYTES = 1024 * 1024;

const apiBodyLimit = bodyLimit({
  maxSize: API_BODY_BYTES,
  onError: () => {
    throw new HttpError(413, 'body_too_large', `the body is larger than the admin API's limit of ${API_BODY_BYTES} bytes`);
  },
});

/** The admin API under `/api`: behind the bearer tokens, or off (answering why) when none is set. */
export function apiRoutes({ store, config, tokens, stats, throttle, transforms, configVersion, reload }: AdminDeps): Hono {
  const app = new Hono<AdminEnv>();
  if (tokens === null) {
    app.all('/api/*', () => {
      throw new HttpError(404, 'admin_api_off', 'the admin API is off: start oncehook with ONCEHOOK_ADMIN_TOKEN set');
    });
    return app as unknown as Hono;
  }
  // The token first: a stranger's body is never read, not even up to the limit.
  const deadline = databaseDeadline(config.limits.writeStallMs);
  app.use('/api/*', bearerAuth(tokens, throttle), apiBodyLimit, (c, next) =>
    // A bulk decision is one statement over what may be hundreds of thousands of tasks, healthy however long it
    // takes: a 503 while it still commits would invite asking again, and a second bulk replay is more effects. A
    // config tried on thousands of deliveries runs their transforms: long, and only reading.
    c.req.path.startsWith('/api/tasks/bulk/') || c.req.path === '/api/config/try' ? next() : deadline(c, next),
  );
  app.route('/api/deliveries', deliveryRoutes({ store, config }));
  app.route('/api/tasks', taskRoutes({ store, config, transforms }));
  app.route('/api/destinations', destinationRoutes({ store, config }));
  app.route('/api/alerts', alertRoutes({ store, config }));
  app.route('/api/rejections', rejectionRoutes({ store }));
  app.route('/api/config', configRoutes({ store, config, reload, configVersion }));
  app.route('/api/instances', instanceRoutes({ store }));
  app.get('/api/stats', async (c) => c.json(await stats()));
  return app as unknown as Hono;
}
