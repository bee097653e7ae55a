import type { Logger } from '../log.ts';
import { codeOf, isRetryable, isUnreachable } from './retryable.ts';

/** The first pause between tries, doubled after each, up to the cap. */
const FIRST_PAUSE_MS = 250;
const LONGEST_PAUSE_MS = 5_000;

/** A try that found the database away, and said so; `tries` counts them. */
export interface Waiting {
  tries: number;
  reason: string;
}

export interface WaitOptions {
  /** How long past the first try a later one may start; 0: the first failure is the last. */
  waitMs: number;
  logger: Pick<Logger, 'warn'>;
  /** Told before each pause, for `/readyz` to say what is awaited. */
  onWaiting?: (waiting: Waiting) => void;
  /** Aborted: the wait ends at once with the last failure (a SIGTERM during the start). */
  signal?: AbortSignal | undefined;
  /** When the wait began (performance.now()): a start waits once in all, over its steps. Default: now. */
  since?: number;
}

/**
 * Whether a failure at start-up says the database is away for now — down, restarting, refusing, silent — rather
 * than set up wrong. A wrong password, a database that does not exist, a URL that is not one, and a server that
 * refuses TLS fail the same way on every try: they are not waited for.
 */
export function worthWaiting(error: unknown): boolean {
  if (!isUnreachable(error) && !isRetryable(error)) return false;
  // sslmode=require against a server without TLS: a reset that no wait mends (see start-failure.ts).
  return !/TLS/.test(String((error as { message?: unknown }).message));
}

/** What a try met, in words fit for a log line and `/readyz`: the error's code, never its whole text. */
export function reasonOf(error: unknown): string {
  const code = codeOf(error);
  return code === undefined ? 'unknown' : (REASONS[code] ?? code);
}

const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  CONNECT_TIMEOUT: 'no answer',
  ETIMEDOUT: 'no answer',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name not found',
  CONNECTION_CLOSED: 'connection closed',
  CONNECTION_ENDED: 'connection closed',
  CONNECTION_DESTROYED: 'connection closed',
  TARGET_SESSION_ATTRS_UNMET: 'no primary among the hosts',
  '57P01': 'the server is shutting down',
  '57P02': 'the server is shutting down',
  '57P03': 'the server is not accepting connections yet',
};

/**
 * Runs `work` (open and migrate the store) until it succeeds, waiting between tries with capped exponential
 * backoff while the database is away, for `waitMs` at most: in a deploy the database and the gateway start
 * together, and a gateway that exits at once leans on a supervisor's restarts, each a cold start. Each failed
 * try is logged. The last failure is thrown as it was, with `waitedMs` on it for the one-line error.
 */
export async function waitForDatabase<T>(work: () => Promise<T>, options: WaitOptions): Promise<T> {
  const started = options.since ?? performance.now();
  for (let tries = 1; ; tries++) {
    try {
      return await work();
    } catch (error) {
      const waitedMs = performance.now() - started;
      if (!worthWaiting(error) || options.signal?.aborted || waitedMs >= options.waitMs) {
        if (options.waitMs > 0 && typeof error === 'object' && error !== null) Object.assign(error, { waitedMs });
        throw error;
      }
      const pauseMs = Math.min(FIRST_PAUSE_MS * 2 ** (tries - 1), LONGEST_PAUSE_MS, options.waitMs - waitedMs);
      const reason = reasonOf(error);
      options.onWaiting?.({ tries, reason });
      options.logger.warn(
        { try: tries, reason, retryInMs: Math.round(pauseMs), waitedMs: Math.round(waitedMs), waitMs: options.waitMs },
        `waiting for the database (${reason}): try ${tries} failed, the next in ${(pauseMs / 1000).toFixed(2)} s; giving up after ${Math.round(options.waitMs / 1000)} s`,
      );
      await pause(pauseMs, options.signal);
      if (options.signal?.aborted) throw error;
    }
  }
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}
