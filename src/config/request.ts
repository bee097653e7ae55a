import { z } from 'zod';
import { HEADER_NAME } from '../header-name.ts';

export const headerName = z.string().regex(HEADER_NAME, 'not an HTTP header name');

/**
 * Headers oncehook writes itself on every forwarded request, and why an action cannot set them: the task's
 * identity and the framing of the request must be the ones its ledger describes.
 */
const OWN_HEADERS: Record<string, string> = {
  'idempotency-key': 'it carries the task ID (rename it with idempotencyHeader)',
  host: 'it is the url\'s host',
  'content-length': 'it is the length of the bytes sent',
  'transfer-encoding': 'oncehook frames the request itself',
  connection: 'oncehook manages its connections',
  'keep-alive': 'oncehook manages its connections',
  upgrade: 'oncehook manages its connections',
  te: 'oncehook frames the request itself',
  trailer: 'oncehook frames the request itself',
  expect: 'oncehook frames the request itself',
};

/** Headers of the Standard Webhooks signature an action with a `signingSecret` sends. */
const SIGNATURE_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'];

/**
 * Visible ASCII and tabs or spaces inside, as HTTP carries a field value unchanged. A value that breaks this (a
 * variable read from a file with its line break) made every attempt fail before a byte was sent.
 */
const HEADER_VALUE = /^[\x21-\x7e](?:[\t\x20-\x7e]*[\x21-\x7e])?$/;

/**
 * An action's or a lookup's `headers`. Their values are secrets (a bearer token, an API key): no message here
 * quotes one, so a config error printed at start never shows it.
 */
export const requestHeaders = z.record(headerName, z.string()).superRefine((headers, ctx) => {
  for (const [name, value] of Object.entries(headers)) {
    if (!HEADER_VALUE.test(value)) {
      ctx.addIssue({
        code: 'custom',
        path: [name],
        message: 'the value is empty, starts or ends with whitespace (a pasted line break?), or holds a character HTTP cannot carry',
      });
    }
  }
});

/** What is wrong with the names of an action's headers, given the rest of the action; each with its key. */
export function headerNameProblems(
  headers: Record<string, string>,
  request: { idempotencyHeader: string; signed: boolean; sendersBytes: boolean },
): { name: string; message: string }[] {
  const problems: { name: string; message: string }[] = [];
  const seen = new Map<string, string>();
  for (const name of Object.keys(headers)) {
    const lower = name.toLowerCase();
    const own = OWN_HEADERS[lower];
    const earlier = seen.get(lower);
    seen.set(lower, name);
    // The request is written with one entry per lower-cased name: the one written last would replace the other.
    if (earlier !== undefined) {
      problems.push({ name, message: `given twice (${earlier}, ${name}): header names are case-insensitive, so one would replace the other` });
    } else if (lower.startsWith('oncehook-')) problems.push({ name, message: 'oncehook sets the Oncehook-* headers: they name the task and its attempt' });
    else if (lower === request.idempotencyHeader.toLowerCase()) problems.push({ name, message: 'it is the idempotencyHeader, which carries the task ID' });
    else if (own !== undefined) problems.push({ name, message: `oncehook sets ${name} itself: ${own}` });
    else if (request.signed && SIGNATURE_HEADERS.includes(lower)) {
      problems.push({ name, message: 'with a signingSecret, oncehook signs the request in the webhook-* headers' });
    } else if (lower === 'content-type' && request.sendersBytes) {
      problems.push({ name, message: 'without a transform the bytes are the sender\'s, sent with the sender\'s content type' });
    }
  }
  return problems;
}

/**
 * What is wrong with an `idempotencyHeader`, given the rest of the action: named after a header oncehook writes
 * itself, the task ID would go out in its place (`Host: t_…`, the task ID as the body's content type) or make undici
 * refuse every attempt before a byte is sent (`Content-Length`, `Transfer-Encoding`, …).
 */
export function idempotencyHeaderProblem(name: string, request: { signed: boolean }): string | null {
  const lower = name.toLowerCase();
  const own = lower === 'idempotency-key' ? undefined : OWN_HEADERS[lower];
  if (own !== undefined) return `oncehook sets ${name} itself: ${own}`;
  if (lower === 'content-type') return `oncehook sets ${name} itself: it is the type of the bytes sent`;
  if (request.signed && SIGNATURE_HEADERS.includes(lower)) return 'with a signingSecret, oncehook signs the request in the webhook-* headers';
  return null;
}

/** The header that carries the task ID. Not an Oncehook-* one, which oncehook sends beside it anyway. */
export const idempotencyHeader = headerName
  .refine((name) => !name.toLowerCase().startsWith('oncehook-'), { message: 'oncehook sends Oncehook-Task-Id already: name the header the downstream reads keys from' })
  .default('Idempotency-Key')
  .describe('the header that carries the task ID');

export const METHODS = ['POST', 'PUT', 'PATCH'] as const;
