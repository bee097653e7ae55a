import { HttpError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { OutageLog } from '../outage-log.ts';
import { dataException } from '../store/retryable.ts';

/** Seconds a sender is told to wait before retrying when the durable write did not finish in time. */
const RETRY_AFTER_SECONDS = 5;

/**
 * Waits for the durable write until the deadline, then answers 503 + Retry-After instead: the sender
 * retries, and the retry is deduplicated against whatever the write did. Never a 2xx before the commit.
 * A write that finishes after its 503 is logged; its own transaction keeps it whole or absent. A write that
 * fails goes to `outage`, which logs a database outage's first failure whole and its repeats in a line each.
 */
export async function withinBudget<T>(work: Promise<T>, deadline: number, logger: Logger, outage: OutageLog): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new HttpError(503, 'store_timeout', 'the delivery could not be recorded durably in time; retry it', {
            'retry-after': String(RETRY_AFTER_SECONDS),
          }),
        ),
      Math.max(0, deadline - performance.now()),
    );
  });
  try {
    const done = await Promise.race([work, late]);
    outage.succeeded();
    return done;
  } catch (error) {
    if (error instanceof HttpError) {
      // A stalled or unreachable database makes every delivery late alike: its failures are the outage's too.
      work.then(
        () => {
          outage.succeeded();
          logger.warn('a write answered 503 committed after its deadline; the retry will be a duplicate');
        },
        (lateError: unknown) => outage.failed(lateError),
      );
      throw error;
    }
    // The group commit retries a failed batch's deliveries one by one, so this one failed alone: on a value
    // the database refuses, a 503 would have the sender retry, unchanged, until it gives up.
    const refused = dataException(error);
    if (refused) {
      logger.warn({ err: error }, 'a verified delivery holds a value the database cannot store');
      throw new HttpError(400, 'unstorable_delivery', `the delivery holds a value the database cannot store: ${refused.message}`);
    }
    // Every delivery fails alike while the database is down: one stack for the outage, not one per delivery.
    outage.failed(error);
    throw new HttpError(503, 'store_unavailable', 'the delivery could not be recorded durably; retry it', {
      'retry-after': String(RETRY_AFTER_SECONDS),
    });
  } finally {
    clearTimeout(timer);
  }
}
