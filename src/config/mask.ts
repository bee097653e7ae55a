import { filled, FILLED } from '../shape/url-template.ts';
import type { Config } from './schema.ts';

/** Text with every secret of the config in it replaced: what may be stored, logged or shown. */
export type Mask = (text: string) => string;

export const MASKED = '[redacted]';

/**
 * Shorter values are not looked for: they would match ordinary words and numbers of an answer (a status code, a
 * header value like `v2`), and none of them is a credential worth the name.
 */
export const SHORTEST_MASKED = 6;

/**
 * The values of the config that are credentials: the sources' secrets and verify tokens, the signing secrets, the
 * OAuth 2.0 client secrets, the actions' and lookups' header values, and what a URL carries as a key — its user
 * info and query values, and an alert's path (a Slack incoming webhook's path is its key). A downstream that echoes
 * one (`401 invalid token Bearer …`) would otherwise have it stored in the ledger, logged and shown.
 */
export function secretValues(config: Config): string[] {
  const values: string[] = [];
  for (const source of Object.values(config.sources)) {
    values.push(...source.secrets);
    if (source.verifyToken !== undefined) values.push(source.verifyToken);
    for (const action of Object.values(source.actions)) {
      if (action.signingSecret !== undefined) values.push(action.signingSecret);
      if (action.auth !== undefined) values.push(action.auth.oauth2.clientSecret);
      values.push(...headerSecrets(action.headers), ...urlSecrets(action.url));
      if (typeof action.lookup === 'string') values.push(...urlSecrets(action.lookup));
      else if (action.lookup !== undefined) values.push(...urlSecrets(action.lookup.url), ...headerSecrets(action.lookup.headers));
    }
  }
  for (const alert of Object.values(config.alerts)) {
    if (alert.signingSecret !== undefined) values.push(alert.signingSecret);
    values.push(...urlSecrets(alert.url), new URL(alert.url).pathname);
  }
  return values;
}

/**
 * A header's value, and each word of it after the first: `Bearer <token>` is echoed as the token alone as often as
 * whole. The words of Basic credentials are decoded too, as a downstream may echo the user and password it read.
 */
function headerSecrets(headers: Readonly<Record<string, string>> | undefined): string[] {
  const values: string[] = [];
  for (const value of Object.values(headers ?? {})) {
    const [scheme, ...words] = value.split(/\s+/);
    values.push(value, ...words);
    if (scheme?.toLowerCase() === 'basic' && words.length === 1) {
      const decoded = Buffer.from(words[0]!, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon > 0 && /^[\x20-\x7e]+$/.test(decoded)) values.push(decoded, decoded.slice(colon + 1));
    }
  }
  return values;
}

/** A URL's user info and query values; what a placeholder fills in (a task ID, a delivery's field) is no secret. */
function urlSecrets(template: string): string[] {
  const url = new URL(filled(template, FILLED));
  const values = [decoded(url.username), decoded(url.password)];
  for (const [, value] of url.searchParams) if (!value.includes(FILLED)) values.push(value);
  return values;
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * One mask for the given values: each, JSON-escaped and percent-encoded as well (an answer that quotes it in JSON
 * or in a URL), is replaced wherever it occurs, the longest first so that a value holding another is masked whole.
 */
export function maskOf(values: Iterable<string>): Mask {
  const forms = new Set<string>();
  for (const value of values) {
    if (value.length < SHORTEST_MASKED) continue;
    forms.add(value);
    forms.add(JSON.stringify(value).slice(1, -1));
    forms.add(encodeURIComponent(value));
  }
  if (forms.size === 0) return (text) => text;
  const pattern = new RegExp(
    [...forms]
      .sort((a, b) => b.length - a.length)
      .map((form) => form.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('|'),
    'g',
  );
  return (text) => text.replace(pattern, MASKED);
}

/** The mask of every credential in the config. */
export const configMask = (config: Config): Mask => maskOf(secretValues(config));
