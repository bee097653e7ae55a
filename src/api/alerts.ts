import { Hono } from 'hono';
import { z } from 'zod';
import type { Config } from '../config/schema.ts';
import { HttpError } from '../errors.ts';
import type { AdminEnv } from '../http/auth.ts';
import { pageOf, pageQuery, readQuery } from '../http/input.ts';
import { alertMessages, alertsOf, queueTestAlert } from '../operate/alerts.ts';
import type { Store } from '../store/connect.ts';

const listQuery = z.strictObject({ alert: z.string().min(1).optional(), ...pageQuery('text') });

/** What `GET /api/alerts` answers: each alert with its conditions, and a page of the messages made. */
export type AlertsAnswer = { alerts: Awaited<ReturnType<typeof alertsOf>> } & Awaited<ReturnType<typeof alertMessages>>;

/** What `POST /api/alerts/{name}/test` answers: the message queued. */
export interface AlertTestAnswer {
  id: string;
  alert: string;
  type: 'alert.test';
  state: 'pending';
  link: string;
}

/** `/api/alerts`: what alerts are configured and where they stand, the messages made, and a test message. */
export function alertRoutes({ store, config }: { store: Store; config: Config }): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();

  app.get('/', async (c) => {
    const query = readQuery(c, listQuery);
    return c.json({ alerts: await alertsOf(store, config), ...(await alertMessages(store, pageOf(query), query.alert)) } satisfies AlertsAnswer);
  });

  app.post('/:name/test', async (c) => {
    const name = c.req.param('name');
    const id = await queueTestAlert(store, config, name, c.get('actor'));
    if (id === null) {
      const names = Object.keys(config.alerts).join(', ') || 'none';
      throw new HttpError(404, 'unknown_alert', `no alert "${name}" is configured; the alerts are: ${names}`);
    }
    return c.json({ id, alert: name, type: 'alert.test', state: 'pending', link: `/api/tasks/${id}` } satisfies AlertTestAnswer, 202);
  });

  return app;
}
