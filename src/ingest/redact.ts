import type { IncomingHttpHeaders } from 'node:http';

/** Headers that carry credentials on any sender, on top of each adapter's own signature headers. */
const ALWAYS_REDACTED = new Set(['cookie']);

/**
 * Parts of a header name that say it holds a credential, whatever the sender calls it (`X-Gitlab-Token`,
 * `X-Auth-Token`, `X-Shopify-Access-Token`, `X-Api-Key`, `Proxy-Authorization`), matched with `-` and `_`
 * removed. Stored headers are only ever shown (the delivery page, the API): nothing reads a value back, so one
 * redacted too eagerly costs nothing but its display.
 */
const CREDENTIAL_PARTS = ['token', 'secret', 'passw', 'session', 'credential', 'auth', 'apikey', 'accesskey', 'private', 'signature', 'hmac'];

const holdsCredential = (name: string) => {
  const bare = name.replace(/[-_]/g, '');
  return CREDENTIAL_PARTS.some((part) => bare.includes(part));
};

const MAX_HEADER_VALUE = 1024;

/**
 * The headers kept with a receipt to explain its decision later: signatures and credentials are replaced
 * by a marker, so neither the database nor a log line ever holds them. Built once per source, because it
 * runs on every delivery.
 *
 * It reads Node's own header object (names already lowercase, repeats joined as the verifier read them):
 * walking the web `Headers` instead made the server adapter build a full copy of them for every delivery.
 */
export function headerRedactor(signatureHeaders: readonly string[]): (headers: IncomingHttpHeaders) => Record<string, string> {
  const secret = new Set([...ALWAYS_REDACTED, ...signatureHeaders.map((name) => name.toLowerCase())]);
  return (headers) => {
    const kept: Record<string, string> = {};
    for (const [name, raw] of Object.entries(headers)) {
      if (raw === undefined) continue;
      const value = Array.isArray(raw) ? raw.join(', ') : raw;
      if (secret.has(name) || holdsCredential(name)) {
        kept[name] = '[redacted]';
      } else {
        kept[name] = value.length > MAX_HEADER_VALUE ? `${value.slice(0, MAX_HEADER_VALUE)}…` : value;
      }
    }
    return kept;
  };
}
