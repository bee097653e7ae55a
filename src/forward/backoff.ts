/**
 * Exponential backoff with full jitter (AWS's "Exponential Backoff and Jitter"): a uniformly random wait up
 * to initialMs·2^(attempt−1), capped — retries from many tasks spread out instead of arriving in waves.
 */
export function backoffMs(attempt: number, backoff: { initialMs: number; maxMs: number }, random = Math.random): number {
  const ceiling = Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random() * ceiling);
}

/** A `Retry-After` answer: a wait in milliseconds, or a moment named by the downstream's clock. */
export type RetryAfter = { delayMs: number } | { at: Date };

/** Every HTTP date form (RFC 9110 §5.6.7) starts with the day's name; Date.parse alone accepts "-5". */
const HTTP_DATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)/;

/** Reads `Retry-After` as delay-seconds or an HTTP date (RFC 9110 §10.2.3); null when absent or unreadable. */
export function parseRetryAfter(value: string | undefined): RetryAfter | null {
  if (value === undefined) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return { delayMs: Number(text) * 1000 };
  if (!HTTP_DATE.test(text)) return null;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : { at: new Date(at) };
}
