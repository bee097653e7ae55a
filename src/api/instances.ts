import { Hono } from 'hono';
import { instancesAnswer } from '../operate/instances.ts';
import type { Store } from '../store/connect.ts';

/** `/api/instances`: every gateway process heard from in the last half minute, with its role and config version. */
export function instanceRoutes({ store }: { store: Store }): Hono {
  const app = new Hono();
  app.get('/', async (c) => c.json(await instancesAnswer(store)));
  return app;
}
