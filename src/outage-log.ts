import { withoutParameters, type Logger } from './log.ts';

export interface OutageMessages {
  level: 'error' | 'warn';
  /** Said of every failure: the first with its stack, repeats in one line each at most every `repeatEveryMs`. */
  failing: string;
  /** Said once, at the first success after failures. */
  recovered: string;
  /** Repeats closer together are counted, not said: ingest fails at the senders' rate, not at a poll's. */
  repeatEveryMs: number;
}

/**
 * The log of a failure that repeats until something outside comes back — the database down, which the
 * forwarder finds on every look at its queue and ingest on every delivery. The first failure of an outage is
 * logged whole, with its stack and cause; repeats as one short line with the count so far and the database's own
 * words, at most one every `repeatEveryMs`; the first success after them as one line saying how long it lasted.
 * A stack every 2 s, or one per delivery, buried the one that mattered.
 */
export function outageLog(logger: Logger, messages: OutageMessages) {
  let failures = 0;
  let since = 0;
  let said = 0;
  return {
    failed(error: unknown): void {
      failures++;
      const now = performance.now();
      if (failures === 1) {
        since = said = now;
        logger[messages.level]({ err: error }, messages.failing);
      } else if (now - said >= messages.repeatEveryMs) {
        said = now;
        logger[messages.level]({ failures, error: innermost(error) }, messages.failing);
      }
    },
    succeeded(): void {
      if (failures === 0) return;
      logger.info({ failures, seconds: Math.round((performance.now() - since) / 1000) }, messages.recovered);
      failures = 0;
    },
  };
}
export type OutageLog = ReturnType<typeof outageLog>;

/** The first line of the innermost cause: what the database or the network said, never a failed query's parameters. */
function innermost(error: unknown): string {
  let inner = withoutParameters(error);
  while (inner instanceof Error && inner.cause !== undefined) inner = inner.cause;
  return (inner instanceof Error ? inner.message : String(inner)).split('\n')[0]!;
}
