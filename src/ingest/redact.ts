/** Headers that carry credentials on any sender, on top of each adapter's own signature headers. */
const ALWAYS_REDACTED = new Set(['authorization', 'proxy-authorization', 'cookie', 'x-api-key']);

const MAX_HEADER_VALUE = 1024;

/**
 * The headers kept with a receipt to explain its decision later: signatures and credentials are replaced
 * by a marker, so neither the database nor a log line ever holds them. Built once per source, because it
 * runs on every delivery.
 */
export function headerRedactor(signatureHeaders: readonly string[]): (headers: Headers) => Record<string, string> {
  const secret = new Set([...ALWAYS_REDACTED, ...signatureHeaders.map((name) => name.toLowerCase())]);
  return (headers) => {
    const kept: Record<string, string> = {};
    headers.forEach((value, name) => {
      const lower = name.toLowerCase();
      if (secret.has(lower) || lower.includes('signature') || lower.includes('hmac')) {
        kept[lower] = '[redacted]';
      } else {
        kept[lower] = value.length > MAX_HEADER_VALUE ? `${value.slice(0, MAX_HEADER_VALUE)}…` : value;
      }
    });
    return kept;
  };
}
