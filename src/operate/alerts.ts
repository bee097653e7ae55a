import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { messageId } from '../alerts/watcher.ts';
import { alertEvent, messageBody } from '../alerts/messages.ts';
import type { Config } from '../config/schema.ts';
import { ALERTS_SOURCE, insertMessages } from '../store/atomic/alerts.ts';
import type { Store } from '../store/connect.ts';
import type { PageRequest } from '../store/queries/cursor.ts';
import { listTasks } from '../store/queries/tasks.ts';
import { rowsOf } from '../store/rows.ts';

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
export async function alertMessages(store: Store, request: PageRequest, alert?: string) {
  const page = await listTasks(store.db, { source: ALERTS_SOURCE, action: alert }, request);
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
