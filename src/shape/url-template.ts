/**
 * An action's `url` and a lookup's `url` as templates: placeholders in the path and the query, filled from the
 * delivery, the task and the body it sends, each value percent-encoded as one path segment or query value. The
 * origin is always literal, so no sender can steer where a request goes. A task's URL is computed once, with its
 * body, and frozen with it; only `{key}` is left to the request, which fills in the ID of the task that sends it.
 */
import { jsonKind } from '../../adapters/body.ts';
import { jsonPointer } from '../json-pointer.ts';
import { placeholderProblem } from './task-key.ts';

const PLACEHOLDER = /\{([^{}]*)\}/g;
const KEY = '{key}';
/** What a URL takes beside the task key's placeholders. */
const URL_PLACEHOLDERS = { named: ['key'], pointers: ['sent'] };

/** A template's literal start that holds a whole origin: the scheme, the host and port, and what ends them. */
const LITERAL_ORIGIN = /^https?:\/\/[^/?#{}]+[/?]/i;

/** The template with every placeholder filled by `value`: the URL it stands for, to check that it parses. */
export const filled = (template: string, value = 'x') => template.replace(PLACEHOLDER, value);

/** What placeholders are filled with to tell a template's own query values from those the delivery gives. */
export const FILLED = 'oncehook-placeholder';

/**
 * What is wrong with a URL template, for the config check: a placeholder before the path (in the scheme, the host or
 * the port), one that is not a placeholder, or a URL that does not parse once they are filled in.
 */
export function urlTemplateProblems(template: string): string[] {
  const first = template.search(PLACEHOLDER);
  if (first === -1) return [];
  const originProblem = 'a placeholder before the path: the scheme, host and port are always written out, so no delivery can choose where the request goes';
  const literalOrigin = LITERAL_ORIGIN.test(template.slice(0, first));
  // An http(s) URL that names the delivery in its origin is told as that, though it may not parse either.
  if (!literalOrigin && /^https?:\/\//i.test(template)) return [originProblem];
  if (!parses(filled(template))) return ['not an http(s) URL once its placeholders are filled in'];
  if (!literalOrigin) return [originProblem];
  return [...template.matchAll(PLACEHOLDER)].map(([, part]) => placeholderProblem(part!, URL_PLACEHOLDERS)).filter((problem) => problem !== null);
}

function parses(url: string): boolean {
  try {
    return /^https?:$/.test(new URL(url).protocol);
  } catch {
    return false;
  }
}

/** A URL template's origin: literal, so the same for every task. */
export const templateOrigin = (template: string): string => new URL(filled(template)).origin;

/** Whether the template names anything of the delivery: only such a URL is computed and frozen with its task. */
export const isShaped = (template: string): boolean => /\{(?!key\})[^{}]*\}/.test(template);

/** What a task's URL is filled from: the delivery, its headers as recorded, and the body the task sends. */
export interface UrlInput {
  eventId: string;
  deliveryId: string;
  topic: string | null;
  /** The delivery's body as JSON, as its adapter read it. */
  body: unknown;
  /** The headers as recorded with the receipt: names lower-case, credentials redacted. */
  headers: Readonly<Record<string, string>>;
  /** The task's body as JSON: what the transform made, else the delivery's. Read only for a `{sent:…}`. */
  sent: () => unknown;
}

/**
 * The task's URL, every placeholder filled but `{key}`; or why it cannot be, naming the placeholder. A value is
 * a string or a number, percent-encoded whole (`/`, `?`, `&`, `#` and spaces included) so that it stays one path
 * segment or one query value.
 */
export function renderUrl(template: string, input: UrlInput, what = 'url'): { url: string } | { error: string } {
  let error: string | null = null;
  const url = template.replace(PLACEHOLDER, (whole, part: string) => {
    if (whole === KEY || error !== null) return whole;
    const value = valueOf(part, input);
    if (typeof value === 'string') return encodeURIComponent(value);
    error = `the ${what}'s {${part}} ${value.missing}`;
    return whole;
  });
  return error === null ? { url } : { error };
}

function valueOf(part: string, input: UrlInput): string | { missing: string } {
  const text = (value: string | null | undefined, what: string) => (value ? value : { missing: `is empty or absent: this delivery has no ${what}` });
  if (part === 'eventId') return text(input.eventId, 'event ID');
  if (part === 'deliveryId') return text(input.deliveryId, 'delivery ID');
  if (part === 'topic') return text(input.topic, 'topic');
  if (part.startsWith('header:')) {
    const value = input.headers[part.slice('header:'.length).toLowerCase()];
    // Recorded headers hold no credential: a redacted one is never put in a URL, where logs and proxies keep it.
    if (value === '[redacted]') return { missing: 'names a header holding a credential, which never goes into a URL' };
    return text(value, 'such header');
  }
  const sent = part.startsWith('sent:');
  const found = jsonPointer(sent ? input.sent() : input.body, part.slice('body:'.length));
  const where = sent ? 'the body the task sends' : "the delivery's body";
  if (typeof found === 'number' && Number.isInteger(found) && !Number.isSafeInteger(found)) {
    return { missing: `is a number JSON cannot carry exactly in ${where}` };
  }
  if (typeof found === 'number') return String(found);
  if (typeof found === 'string') return found === '' ? { missing: `is an empty string in ${where}` } : found;
  if (found === undefined) return { missing: `is missing: ${where} has nothing there` };
  return { missing: `is ${jsonKind(found)} in ${where}, not a string or a number` };
}

/** The URL a task's request goes to: its frozen URL (or the config's), `{key}` filled with the ID of the task. */
export const withKey = (url: string, taskId: string): string => url.replaceAll(KEY, encodeURIComponent(taskId));

/** The URLs frozen with a task: each null where its template names nothing of the delivery, and the config's is used. */
export interface FrozenUrls {
  requestUrl: string | null;
  lookupUrl: string | null;
}

/** A task's URLs from its action's `url` and lookup url, or why one cannot be made of this delivery. */
export function freezeUrls(action: { url: string; lookup?: string | { url: string } | undefined }, input: UrlInput): FrozenUrls | { error: string } {
  const frozen: FrozenUrls = { requestUrl: null, lookupUrl: null };
  const lookup = typeof action.lookup === 'string' ? action.lookup : action.lookup?.url;
  for (const [template, what, field] of [[action.url, 'url', 'requestUrl'], [lookup, 'lookup url', 'lookupUrl']] as const) {
    if (template === undefined || !isShaped(template)) continue;
    const rendered = renderUrl(template, input, what);
    if ('error' in rendered) return rendered;
    frozen[field] = rendered.url;
  }
  return frozen;
}

/** Whether a task failed because its URL could not be made of its delivery, not because of its transform. */
export const isUrlError = (error: string): boolean => /^the (lookup )?url's \{/.test(error);

/** The words a task failed for its URL is recorded with. */
export const URL_FAILED = {
  lastError: (error: string) => `nothing was sent: ${error}`,
  decision: "failed: the url could not be made of this delivery, and nothing was sent; fix the action's url, then retry",
};
