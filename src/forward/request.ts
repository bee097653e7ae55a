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
  // Named in lower case as they are set, later ones replacing earlier ones in place, so that an action's
  // `Content-Type` replaces the task's `content-type` instead of going out beside it.
  const headers: Record<string, string> = { 'user-agent': USER_AGENT };
  if (task.contentType !== null) headers['content-type'] = task.contentType;
  for (const [name, value] of lowerCased(config.headers ?? NO_HEADERS)) headers[name] = value;
  headers[config.idempotencyHeader.toLowerCase()] = task.id;
  headers['oncehook-task-id'] = task.id;
  headers['oncehook-attempt'] = String(task.attempts);
  headers['oncehook-event-id'] = headerText(task.eventId);
  headers['oncehook-source'] = task.source;
  if (task.topic !== null) headers['oncehook-topic'] = headerText(task.topic);
  sign(headers, route, task.id, task.body);
  return { method: config.method, ...target(config, config.url, frozenUrl, task.id), headers, body: task.body, timeoutMs: config.timeoutMs };
}

const NO_HEADERS: Readonly<Record<string, string>> = {};

/** An action's headers named in lower case: read once per config, not once per attempt. */
const lowerCasedHeaders = new WeakMap<Readonly<Record<string, string>>, readonly (readonly [string, string])[]>();

function lowerCased(configured: Readonly<Record<string, string>>): readonly (readonly [string, string])[] {
  let lower = lowerCasedHeaders.get(configured);
  if (lower === undefined) {
    lower = Object.entries(configured).map(([name, value]) => [name.toLowerCase(), value] as const);
    lowerCasedHeaders.set(configured, lower);
  }
  return lower;
}

type Target = Pick<Outgoing, 'origin' | 'path'>;

/** The config's URLs without `{key}`, the same for every task, parsed once: by the action, or the lookup, they are of. */
const configTargets = new WeakMap<object, Target>();

/** Where a request goes: the frozen URL, else the config's, `{key}` filled. */
function target(owner: object, configured: string, frozenUrl: string | null, taskId: string): Target {
  if (frozenUrl === null) {
    const known = configTargets.get(owner);
    if (known !== undefined) return known;
  }
  const url = withKey(frozenUrl ?? configured, taskId);
  const parsed = new URL(url);
  const found = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
  if (frozenUrl === null && url === configured) configTargets.set(owner, found);
  return found;
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
  const headers: Record<string, string> = { 'user-agent': USER_AGENT, accept: 'application/json' };
  for (const [name, value] of lowerCased(lookup.headers)) headers[name] = value;
  headers['oncehook-task-id'] = task.id;
  headers['oncehook-source'] = task.source;
  sign(headers, route, task.id, EMPTY);
  return { method: 'GET', ...target(lookup, lookup.template, frozenUrl, task.id), headers, body: null, timeoutMs: route.config.timeoutMs };
}

const EMPTY = new Uint8Array(0);

/** Standard Webhooks headers, so the downstream can verify that oncehook sent this, with its own library. */
function sign(headers: Record<string, string>, route: Route, taskId: string, payload: Uint8Array): void {
  if (route.signer === null) return;
  const now = new Date();
  headers['webhook-id'] = taskId;
  headers['webhook-timestamp'] = String(Math.floor(now.getTime() / 1000));
  headers['webhook-signature'] = route.signer.sign(taskId, now, Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength));
}
