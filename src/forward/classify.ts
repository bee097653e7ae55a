import type { Mask } from '../config/mask.ts';
import { parseRetryAfter, type RetryAfter } from './backoff.ts';
import type { Exchange } from './exchange.ts';
import { matchValue } from '../shape/filter.ts';
import { referenceOf, type Answer } from './reference.ts';

/** The ledger's `class` of an attempt: each kind of outcome has its own answer. */
export const OUTCOME_CLASSES = {
  /** 2xx: a confirmed effect. */
  success: 'success',
  /** Refused, DNS, TLS, connect timeout: the request never reached an open connection. */
  notSent: 'not_sent',
  /** 408, 409, 425, 429, 503: the downstream asks to be tried again, and says it did not act. */
  retryable: 'retryable',
  /** 400, 404, 410, 422 and other 4xx: the input is bad; more tries will not help. */
  rejected: 'rejected',
  /** 401, 403: oncehook itself is refused. */
  refused: 'refused',
  /** A timeout or a reset after the request was written, or an answer that does not say it did not act: the effect may exist. */
  unknown: 'unknown',
  /** A lookup's answers: the effect exists, does not exist, or the lookup could not tell. */
  found: 'lookup_found',
  absent: 'lookup_absent',
  unanswered: 'lookup_unanswered',
} as const;
type Classes = typeof OUTCOME_CLASSES;

/**
 * What a lookup's answer says of its origin, not of the effect: overloaded (429, 503), so it cools down, or
 * refusing oncehook (401, 403), so it is paused until a person resumes it.
 */
export type LookupStanding = { cooling: true; retryAfter: RetryAfter | null } | { cooling: false };

export type Verdict =
  | { class: Classes['success'] | Classes['found']; status: number; reference: string }
  | { class: Classes['notSent'] | Classes['unknown']; status: number | null; error: string }
  | { class: Classes['unanswered']; status: number | null; error: string; standing?: LookupStanding }
  | { class: Classes['retryable']; status: number; error: string; retryAfter: RetryAfter | null; coolDown: boolean }
  | { class: Classes['rejected'] | Classes['refused'] | Classes['absent']; status: number; error: string };

/**
 * Answers that say the request was not acted on: 408 (it was not read whole), 425 and 429 (not taken yet),
 * 503 (not served), and 409, which a downstream honouring keys answers while the same key is in progress.
 */
const RETRYABLE = new Set([408, 409, 425, 429, 503]);
/**
 * Answers that say nothing of whether the effect exists. A 500 may come after the work was done; a proxy's
 * 502 or 504 knows nothing of what the application behind it did; a 303 answers a POST the server acted on.
 * Sent again blindly, each could be a second effect, so they are reconciled as an unknown outcome.
 */
const MAY_HAVE_ACTED = (status: number) => status === 303 || (status >= 500 && !RETRYABLE.has(status) && status !== 501 && status !== 505);
/** The downstream is overloaded: every task bound for it waits, not only this one. */
const COOL_DOWN = new Set([429, 503]);

const unmasked: Mask = (text) => text;

/**
 * Every text a verdict carries — its error, its reference — passes the config's mask as the verdict is made, so
 * the secrets a downstream echoes (`401 invalid token Bearer …`) are never stored, logged or shown. The answer
 * itself is not changed: what it means (its JSON, its headers) is read as it came.
 */
function masked(verdict: Verdict, mask: Mask): Verdict {
  if ('reference' in verdict) return { ...verdict, reference: mask(verdict.reference) };
  return { ...verdict, error: mask(verdict.error) };
}

/** Classifies the answer to a send. */
export function classifySend(exchange: Exchange, referencePointer: string | undefined, mask = unmasked): Verdict {
  return masked(sendVerdict(exchange, referencePointer, mask), mask);
}

function sendVerdict(exchange: Exchange, referencePointer: string | undefined, mask: Mask): Verdict {
  if (exchange.kind === 'failure') return failureVerdict(exchange, OUTCOME_CLASSES.unknown);
  const { answer } = exchange;
  const { status } = answer;
  if (status >= 200 && status < 300) {
    return { class: OUTCOME_CLASSES.success, status, reference: referenceOf(answer, referencePointer) };
  }
  const error = describe(answer, mask);
  if (MAY_HAVE_ACTED(status)) return { class: OUTCOME_CLASSES.unknown, status, error: `${error} (the downstream may have acted)` };
  if (RETRYABLE.has(status)) {
    return {
      class: OUTCOME_CLASSES.retryable,
      status,
      error,
      retryAfter: parseRetryAfter(answer.headers['retry-after']),
      coolDown: COOL_DOWN.has(status),
    };
  }
  if (status === 401 || status === 403) return { class: OUTCOME_CLASSES.refused, status, error };
  // Redirects are not followed: a 3xx other than 303 means the URL is wrong, which a person fixes.
  return { class: OUTCOME_CLASSES.rejected, status, error };
}

/**
 * Classifies a lookup's answer: 2xx the effect exists, 404 it does not, anything else says nothing. An HTML
 * page is never a verdict: a sign-in page answering 200 would mark a task done that never was, and a web
 * server's 404 page for a mistyped lookup path would have it sent again. A 429, 503, 401 or 403 says nothing
 * of the effect either, but something of the lookup's origin, whatever its body: a proxy's HTML 503 page is
 * an overload all the same, and a sign-in page answering 401 a refusal.
 */
export function classifyLookup(exchange: Exchange, referencePointer: string | undefined, found?: unknown, mask = unmasked): Verdict {
  return masked(lookupVerdict(exchange, referencePointer, found, mask), mask);
}

function lookupVerdict(exchange: Exchange, referencePointer: string | undefined, found: unknown, mask: Mask): Verdict {
  if (exchange.kind === 'failure') return failureVerdict(exchange, OUTCOME_CLASSES.unanswered);
  const { answer } = exchange;
  const { status } = answer;
  if (COOL_DOWN.has(status)) {
    const retryAfter = parseRetryAfter(answer.headers['retry-after']);
    return { class: OUTCOME_CLASSES.unanswered, status, error: describe(answer, mask), standing: { cooling: true, retryAfter } };
  }
  if (status === 401 || status === 403) {
    return { class: OUTCOME_CLASSES.unanswered, status, error: describe(answer, mask), standing: { cooling: false } };
  }
  if (/^\s*text\/html\b/i.test(answer.headers['content-type'] ?? '')) {
    return { class: OUTCOME_CLASSES.unanswered, status, error: `${answer.status} ${answer.statusText}: an HTML page, not a lookup's answer`.trim() };
  }
  if (status >= 200 && status < 300 && found !== undefined) return searched(answer, referencePointer, found);
  if (status >= 200 && status < 300) {
    return { class: OUTCOME_CLASSES.found, status, reference: referenceOf(answer, referencePointer) };
  }
  if (status === 404) return { class: OUTCOME_CLASSES.absent, status, error: 'the lookup confirmed the effect does not exist' };
  return { class: OUTCOME_CLASSES.unanswered, status, error: describe(answer, mask) };
}

/**
 * A search API answers 200 whether or not the effect exists: its JSON says which, by matching `found` or not. An
 * answer that is not JSON (a proxy's page, a truncated body) says nothing either way.
 */
function searched(answer: Answer, referencePointer: string | undefined, found: unknown): Verdict {
  const { status } = answer;
  let json: unknown;
  try {
    json = JSON.parse(answer.body.toString('utf8'));
  } catch {
    return { class: OUTCOME_CLASSES.unanswered, status, error: `${`${status} ${answer.statusText}`.trim()}: not JSON, so found cannot be matched` };
  }
  const mismatch = matchValue(found, json, 'answer');
  if (mismatch === null) return { class: OUTCOME_CLASSES.found, status, reference: referenceOf(answer, referencePointer) };
  return { class: OUTCOME_CLASSES.absent, status, error: `the lookup's answer does not match found (${mismatch}): the effect does not exist` };
}

function failureVerdict(
  failure: Extract<Exchange, { kind: 'failure' }>,
  written: Classes['unknown'] | Classes['unanswered'],
): Verdict {
  const cause = errorText(failure.error);
  if (!failure.written) return { class: OUTCOME_CLASSES.notSent, status: null, error: `not sent: ${cause}` };
  return {
    class: written,
    status: null,
    error: failure.timedOut ? `timed out after the request was written: ${cause}` : `connection lost after the request was written: ${cause}`,
  };
}

function errorText(error: Error): string {
  const code = (error as Error & { code?: string }).code;
  return code && !error.message.includes(code) ? `${code} ${error.message}` : error.message;
}

const MAX_ERROR_BODY = 300;

/** The status line and the body's start. Masked before it is cut: a secret across the cut would leave its start. */
function describe(answer: Answer, mask: Mask): string {
  const body = mask(answer.body.toString('utf8')).trim();
  const line = `${answer.status} ${answer.statusText}`.trim();
  return body ? `${line}: ${body.length > MAX_ERROR_BODY ? `${body.slice(0, MAX_ERROR_BODY)}…` : body}` : line;
}
