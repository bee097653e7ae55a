import { sql } from 'drizzle-orm';
import type postgres from 'postgres';

export const MARK = '/* prepared */';

/**
 * Begins a statement that postgres.js should prepare once per connection and reuse. Drizzle sends every raw
 * statement unnamed, and postgres.js then describes an unnamed statement with parameters before it binds
 * it: two round trips and a parse and plan on every call (measured: a tenth of the gateway's CPU under
 * ingest load went to the second round trip alone). Only statements whose text never varies may carry it:
 * each distinct text stays prepared for the life of its connection.
 */
export const PREPARED = sql.raw(`${MARK} `);

type Unsafe = (query: string, parameters?: unknown[], options?: { prepare?: boolean }) => unknown;

/**
 * The client drizzle is given: the same postgres.js client, except that a statement beginning with
 * `PREPARED` is sent as a prepared statement, in transactions too.
 */
export function preparing<T extends postgres.Sql>(client: T): T {
  return new Proxy(client, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (property === 'unsafe') {
        const unsafe = value as Unsafe;
        return (query: string, parameters?: unknown[], options?: { prepare?: boolean }) =>
          unsafe.call(target, query, parameters, query.startsWith(MARK) ? { ...options, prepare: true } : options);
      }
      if (property === 'begin' || property === 'savepoint') {
        const begin = value as (...args: unknown[]) => unknown;
        return (...args: unknown[]) => {
          const body = args.pop() as (tx: postgres.Sql) => unknown;
          return begin.call(target, ...args, (tx: postgres.Sql) => body(preparing(tx)));
        };
      }
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
