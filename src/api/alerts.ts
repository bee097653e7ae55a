import { randomUUID } from 'node:crypto';
import { Hono } from 'hono';
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { messageId } from '../alerts/watcher.ts';
import { alertEvent, messageBody } from '../alerts/messages.ts';
import type { Config } from '../config/schema.ts';
import { HttpError } from '../errors.ts';
import { ALERTS_SOURCE, insertMessages } from '../store/atomic/alerts.ts';
import type { Store } from '../store/connect.ts';
import { listTasks } from '../store/queries/tasks.ts';
import { rowsOf } from '../store/rows.ts';
import type { AdminEnv } from '../http/auth.ts';
import { pageOf, pageQuery, readQuery } from '../http/input.ts';

const listQuery = z.strictObject({ alert: z.string().min(1).optional(), ...pageQuery('text') });

/**
 * Each configured alert with where its conditions stand. The endpoint's URL is left out: a Slack incoming webhook's
 * path is its credential. Its origin says where messages go.
 */
export async function alertsOf(store: Store, config: Config) {
  const states = await rowsOf<{ alert: string; condition: string; open: boolean; lastSentAt: string | null; sequence: number }>(
    store.db,
    sql`select alert, condition, open, last_sent_at as "lastSentAt", sequence from alert_states`,
  );
  return Object.entries(config.alerts).map(([name, alert]) => ({
    name,
    format: alert.format,
    destination: new URL(alert.url).origin,
    on: alert.on,
    minIntervalSeconds: alert.minIntervalSeconds,
    conditions: alert.on.map((condition) => {
      const state = states.find((s) => s.alert === name && s.condition === condition);
      return {
        condition,
        open: state?.open ?? false,
        lastSentAt: state?.lastSentAt ? new Date(state.lastSentAt) : null,
        messages: state?.sequence ?? 0,
      };
    }),
  }));
}

/** The messages sent or on their way, newest first: each is a task of source `_alerts`, its state its delivery. */
export async function alertMessages(store: Store, query: z.output<typeof listQuery>) {
  const page = await listTasks(store.db, { source: ALERTS_SOURCE, action: query.alert }, pageOf(query));
  return {
    ...page,
    items: page.items.map((task) => ({
      id: task.id,
      alert: task.action,
      condition: task.eventId,
      type: task.topic,
      state: task.state,
      attempts: task.attempts,
      lastError: task.lastError,
      createdAt: task.createdAt,
      updatedAt: task.updatedAt,
    })),
  };
}

/**
 * A test message now, through the same outbox as every alert: the way to see that the endpoint receives them. Its
 * ID is random, so every test asked for is a message of its own. Null when there is no such alert.
 */
export async function queueTestAlert(store: Store, config: Config, name: string, actor: string): Promise<string | null> {
  const alert = config.alerts[name];
  if (!alert) return null;
  const event = alertEvent({
    type: 'alert.test',
    alert: name,
    condition: 'test',
    gathered: { count: 0, tasks: [], by: {}, detail: [`asked by ${actor}`] },
    total: 0,
    publicUrl: config.publicUrl,
    at: new Date(),
  });
  const id = messageId(name, `test:${randomUUID()}`, 0);
  await insertMessages(store.db, [{ id, alert: name, condition: 'test', type: 'alert.test', body: messageBody(alert.format, event) }]);
  return id;
}

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
    return c.json({ alerts: await alertsOf(store, config), ...(await alertMessages(store, query)) } satisfies AlertsAnswer);
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
