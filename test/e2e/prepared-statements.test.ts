import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/connect.ts';
import { PREPARED } from '../../src/store/prepared.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { freshPostgresDatabase, type TestDatabase } from '../support/engine.ts';

/** PostgreSQL only: PGlite runs in process, with no round trip to save. */
let database: TestDatabase;
let store: Store;

beforeAll(async () => {
  database = await freshPostgresDatabase();
  // One connection, so the statements below and the look at what it has prepared share a session.
  store = await openStore({ databaseUrl: database.url, poolSize: 1 });
});
afterAll(async () => {
  await store?.close();
  await database?.drop();
});

const preparedTexts = () =>
  rowsOf<{ statement: string }>(store.db, sql`select statement from pg_prepared_statements where statement like '%oncehook-probe%'`);

describe('statements marked PREPARED', () => {
  it('are prepared once per connection and reused, in and out of transactions; others stay unnamed', async () => {
    for (let i = 0; i < 3; i++) {
      expect(await rowsOf(store.db, sql`${PREPARED}select ${i}::int as n /* oncehook-probe marked */`)).toEqual([{ n: i }]);
      await store.db.transaction(async (tx) => {
        expect(await rowsOf(tx, sql`${PREPARED}select ${i + 10}::int as n /* oncehook-probe in a transaction */`)).toEqual([{ n: i + 10 }]);
      });
      expect(await rowsOf(store.db, sql`select ${i}::int as n /* oncehook-probe unmarked */`)).toEqual([{ n: i }]);
    }
    const texts = (await preparedTexts()).map((row) => row.statement).sort();
    expect(texts).toHaveLength(2);
    expect(texts[0]).toMatch(/in a transaction/);
    expect(texts[1]).toMatch(/oncehook-probe marked/);
  });
});
