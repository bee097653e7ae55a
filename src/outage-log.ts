import { withoutParameters, type Logger } from './log.ts';

export interface OutageMessages {
  level: 'error' | 'warn';
  /** Said of every failure: the first with its stack, each repeat in one line. */
  failing: string;
  /** Said once, at the first success after failures. */
  recovered: string;
}

/**
 * The log of a failure that repeats until something outside comes back — the database down, which the
 * forwarder finds on every look at its queue, every 2 s. The first failure of an outage is logged whole, with
 * its stack and cause; each repeat as one short line with the count and the database's own words; the first
 * success after them as one line saying how long it lasted. A stack every 2 s buried the one that mattered.
 */
export function outageLog(logger: Logger, messages: OutageMessages) {
  let failures = 0;
  let since = 0;
  return {
    failed(error: unknown): void {
      failures++;
      if (failures === 1) {
        since = performance.now();
        logger[messages.level]({ err: error }, messages.failing);
      } else {
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
