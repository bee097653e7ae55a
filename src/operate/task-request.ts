import type { Config } from '../config/schema.ts';
import { filled, FILLED, withKey } from '../shape/url-template.ts';

/**
 * An action's URL as people are shown it: its query left out, where an API key is often passed (`?key=…`), and
 * said to be there; a query value its template fills from the delivery or the task (`?order_id={body:/id}`) is
 * shown, as what the request asks for. A path can be a credential too (an incoming webhook's): that is the config's
 * to keep out.
 */
export function shownUrl(url: string, template: string): string {
  const parsed = new URL(url);
  const base = `${parsed.origin}${parsed.pathname}`;
  const named = new Set([...new URL(filled(template, FILLED)).searchParams].filter(([, value]) => value.includes(FILLED)).map(([name]) => name));
  if (named.size === 0) return `${base}${parsed.search ? '?…' : ''}`;
  const shown = [...parsed.searchParams].map(([name, value]) => `${encodeURIComponent(name)}=${named.has(name) ? encodeURIComponent(value) : '…'}`);
  return `${base}?${shown.join('&')}`;
}

/**
 * How the task's next attempt goes out, as the config says now: the body is the task's own (`body`), its URLs the
 * ones frozen with it where its action's url names the delivery, the rest is the action's. Header names only: their
 * values are credentials.
 */
export function requestOf(
  config: Config,
  task: { id: string; source: string; action: string; contentType: string | null; frozenUrls: { requestUrl: string | null; lookupUrl: string | null } },
) {
  const action = config.sources[task.source]?.actions[task.action];
  if (action === undefined) return null;
  const lookup = typeof action.lookup === 'string' ? action.lookup : action.lookup?.url;
  const shown = (frozen: string | null, template: string) => shownUrl(withKey(frozen ?? template, task.id), template);
  return {
    method: action.method,
    url: shown(task.frozenUrls.requestUrl, action.url),
    ...(lookup === undefined ? {} : { lookupUrl: shown(task.frozenUrls.lookupUrl, lookup) }),
    contentType: task.contentType,
    headers: Object.keys(action.headers ?? {}),
    idempotencyHeader: action.idempotencyHeader,
  };
}
