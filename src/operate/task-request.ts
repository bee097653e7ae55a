import type { Config } from '../config/schema.ts';
import { withKey } from '../shape/url-template.ts';

/**
 * An action's URL as people are shown it: its query left out, where an API key is often passed (`?key=…`), and
 * said to be there. A path can be a credential too (an incoming webhook's): that is the config's to keep out.
 */
function shownUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}${parsed.search ? '?…' : ''}`;
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
  return {
    method: action.method,
    url: shownUrl(withKey(task.frozenUrls.requestUrl ?? action.url, task.id)),
    ...(lookup === undefined ? {} : { lookupUrl: shownUrl(withKey(task.frozenUrls.lookupUrl ?? lookup, task.id)) }),
    contentType: task.contentType,
    headers: Object.keys(action.headers ?? {}),
    idempotencyHeader: action.idempotencyHeader,
  };
}
