import { withKey } from '../shape/url-template.ts';
import type { ClaimedTask } from '../store/atomic/claim.ts';
import type { Outgoing } from './exchange.ts';
import type { Lookup, Route } from './routes.ts';

const USER_AGENT = 'oncehook';

/**
 * The send of a task: its stored bytes exactly (the sender's, or what the action's transform made of them when
 * the task was created), under the task's content type, named by the task ID — the same key and the same
 * bytes on every attempt, so a downstream honouring the key makes one effect. The method and the action's
 * headers are read from the config as it is now: headers hold credentials, which are never stored. The URL is the
 * one frozen with the task where its action's url names the delivery, else the config's.
 */
export function sendRequest(task: ClaimedTask, route: Route, frozenUrl: string | null = null): Outgoing {
  const { config } = route;
  const headers: Record<string, string> = {
    'user-agent': USER_AGENT,
    ...(task.contentType === null ? {} : { 'content-type': task.contentType }),
    ...config.headers,
    [config.idempotencyHeader.toLowerCase()]: task.id,
    'oncehook-task-id': task.id,
    'oncehook-attempt': String(task.attempts),
    'oncehook-event-id': headerText(task.eventId),
    'oncehook-source': task.source,
    ...(task.topic === null ? {} : { 'oncehook-topic': headerText(task.topic) }),
  };
  return {
    method: config.method,
    url: new URL(withKey(frozenUrl ?? config.url, task.id)),
    headers: { ...lowerCased(headers), ...signature(route, task.id, Buffer.from(task.body)) },
    body: task.body,
    timeoutMs: config.timeoutMs,
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
export function lookupRequest(task: ClaimedTask, route: Route, lookup: Lookup, frozenUrl: string | null = null): Outgoing {
  const headers = {
    'user-agent': USER_AGENT,
    accept: 'application/json',
    ...lookup.headers,
    'oncehook-task-id': task.id,
    'oncehook-source': task.source,
  };
  return {
    method: 'GET',
    url: new URL(withKey(frozenUrl ?? lookup.template, task.id)),
    headers: { ...lowerCased(headers), ...signature(route, task.id, Buffer.alloc(0)) },
    body: null,
    timeoutMs: route.config.timeoutMs,
  };
}

/**
 * One entry per header whatever the case it was configured in: `Content-Type` from an action's headers
 * replaces the task's `content-type` instead of going out beside it.
 */
function lowerCased(headers: Record<string, string>): Record<string, string> {
  const lower: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) lower[name.toLowerCase()] = value;
  return lower;
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
