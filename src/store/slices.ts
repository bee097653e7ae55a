/**
 * Rows one statement may read when a count or a sweep goes over a table whose size follows the history. On
 * embedded PGlite a statement holds the whole process while it runs — a count of a million rows held ingest
 * for a third of a second or more — while slices of this size take a few milliseconds each, and deliveries are
 * answered between them. PostgreSQL works in its own process: one statement.
 */
export const SLICE = { pglite: 10_000, postgres: Infinity } as const;

/** Lets the event loop serve what arrived during a slice before the next one runs. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
