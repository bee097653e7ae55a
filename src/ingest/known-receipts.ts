import type { Logger } from '../log.ts';
import type { Db } from '../store/connect.ts';
import { knownKeys, type DedupKey } from '../store/queries/known-keys.ts';

type Asked = { keys: DedupKey[]; resolve: (known: boolean[]) => void };

/**
 * Ingest's look before planning: is a delivery already known? Every question asked in one turn of the event loop
 * is one statement. Never a reason to fail a delivery: an error, or no answer within `waitMs`, is "not known", and
 * the delivery is planned as before — its record decides.
 */
export class KnownReceipts {
  #asked: Asked[] = [];

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
  ) {}

  check(keys: DedupKey[], waitMs: number): Promise<boolean[]> {
    const unknown = () => keys.map(() => false);
    if (keys.length === 0) return Promise.resolve([]);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(unknown()), waitMs);
      if (this.#asked.length === 0) setImmediate(() => void this.#ask(this.#asked.splice(0)));
      this.#asked.push({
        keys,
        resolve: (known) => {
          clearTimeout(timer);
          resolve(known);
        },
      });
    });
  }

  async #ask(asked: Asked[]): Promise<void> {
    let known: boolean[];
    try {
      known = await knownKeys(this.db, asked.flatMap(({ keys }) => keys));
    } catch (error) {
      this.logger.debug({ err: error }, 'could not look up whether deliveries are known; planning them');
      known = [];
    }
    let at = 0;
    for (const { keys, resolve } of asked) {
      resolve(keys.map((_, i) => known[at + i] ?? false));
      at += keys.length;
    }
  }
}
