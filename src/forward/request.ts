import type { ClaimedTask } from '../store/atomic/claim.ts';
import type { Outgoing } from './exchange.ts';
import type { Route } from './routes.ts';

const USER_AGENT = 'oncehook';

/**
 * The send of a task: its stored bytes exactly, under its content type, named by the task ID — the same
 * key and the same bytes on every attempt, so a downstream honouring `Idempotency-Key` makes one effect.
 */
export function sendRequest(task: ClaimedTask, route: Route): Outgoing {
  const headers: Record<string, string> = {
    'user-agent': USER_AGENT,
    'idempotency-key': task.id,
    'oncehook-task-id': task.id,
    'oncehook-attempt': String(task.attempts),
    'oncehook-event-id': headerText(task.eventId),
    'oncehook-source': task.source,
  };
  if (task.topic !== null) headers['oncehook-topic'] = headerText(task.topic);
  if (task.contentType !== null) headers['content-type'] = task.contentType;
  return {
    method: 'POST',
    url: new URL(route.config.url),
    headers: { ...headers, ...signature(route, task.id, Buffer.from(task.body)) },
    body: task.body,
    timeoutMs: route.config.timeoutMs,
  };
}

/** Visible ASCII, with inner spaces: what any HTTP stack carries unchanged. */
const PLAIN_HEADER_TEXT = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/**
 * An event ID or a topic as a header value. Read from a JSON body they can hold any Unicode, a line break or
 * an emoji, which undici refuses to send: every attempt failed before it was written, and the task could
 * never be delivered. Anything but plain ASCII goes percent-encoded as UTF-8 (`encodeURIComponent`).
 */
export function headerText(value: string): string {
  return PLAIN_HEADER_TEXT.test(value) ? value : encodeURIComponent(value);
}

/** The lookup asking whether the task's effect exists: `{key}` is the task ID, URL-encoded. */
export function lookupRequest(task: ClaimedTask, route: Route, template: string): Outgoing {
  return {
    method: 'GET',
    url: new URL(template.replaceAll('{key}', encodeURIComponent(task.id))),
    headers: {
      'user-agent': USER_AGENT,
      accept: 'application/json',
      'oncehook-task-id': task.id,
      'oncehook-source': task.source,
      ...signature(route, task.id, Buffer.alloc(0)),
    },
    body: null,
    timeoutMs: route.config.timeoutMs,
  };
}

/** Standard Webhooks headers, so the downstream can verify that oncehook sent this, with its own library. */
function signature(route: Route, taskId: string, payload: Buffer): Record<string, string> {
  if (route.signer === null) return {};
  const now = new Date();
  return {
    'webhook-id': taskId,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': route.signer.sign(taskId, now, payload),
  };
}
