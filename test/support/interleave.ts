import type { Store } from '../../src/store/connect.ts';

/** The store, its database calling `hook` with the statement's number (from 1) just before each statement. */
export function beforeEachStatement(store: Store, hook: (n: number) => Promise<unknown> | void): Store {
  let statements = 0;
  const watched = (db: Store['db']) =>
    new Proxy(db, {
      get(target, property, receiver) {
        if (property !== 'execute') return Reflect.get(target, property, receiver);
        return async (query: Parameters<typeof target.execute>[0]) => {
          await hook(++statements);
          return target.execute(query);
        };
      },
    });
  return {
    ...store,
    db: watched(store.db),
    // Lanes too: the forwarder and ingest write on lanes of their own.
    lane() {
      const lane = store.lane();
      return {
        kind: lane.kind,
        get db() {
          return watched(lane.db);
        },
        abandon: lane.abandon,
        close: () => lane.close(),
      };
    },
  };
}

/**
 * The store, its database running `work` once just before its `n`-th statement (counted from 1): a write that
 * lands at a chosen point between a reader's statements, deterministically rather than by racing it.
 */
export function writeBeforeStatement(store: Store, n: number, work: () => Promise<unknown>): Store {
  return beforeEachStatement(store, (statement) => (statement === n ? work() : undefined));
}
