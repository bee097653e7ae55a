import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/connect.ts';
import { PREPARED } from '../../src/store/prepared.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { freshPostgresDatabase, type TestDatabase } from '../support/engine.ts';

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

describe('statements marked PREPARED on PostgreSQL', () => {
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

describe('statements marked PREPARED on PGlite', () => {
  let embedded: Store;
  beforeAll(async () => {
    embedded = await openStore({});
  });
  afterAll(async () => embedded?.close());

  const probe = (n: number) => sql`${PREPARED}select ${n}::int as n, now() as at, jsonb_build_object('n', ${n}::int) as doc,
    '\\x0102'::bytea as raw, null::text as nothing /* oncehook-probe */`;
  const plain = (n: number) => sql`select ${n}::int as n, now() as at, jsonb_build_object('n', ${n}::int) as doc,
    '\\x0102'::bytea as raw, null::text as nothing /* oncehook-probe plain */`;

  it('are parsed once and then only bound, answering as the same statement unmarked does', async () => {
    for (let i = 0; i < 4; i++) {
      const [marked] = await rowsOf<Record<string, unknown>>(embedded.db, probe(i));
      const [unmarked] = await rowsOf<Record<string, unknown>>(embedded.db, plain(i));
      expect(marked).toEqual({ ...unmarked, at: marked!.at });
      expect(typeof marked!.at).toBe(typeof unmarked!.at);
      expect(marked!.doc).toEqual({ n: i });
    }
    const [prepared] = await rowsOf<{ runs: number; count: number }>(
      embedded.db,
      sql`select count(*)::int as count, sum(generic_plans + custom_plans)::int as runs
          from pg_prepared_statements where statement like '%oncehook-probe */%'`,
    );
    expect(prepared).toEqual({ count: 1, runs: 4 });
  });

  it('fail with the database error, and run again after it; their notifications reach listeners', async () => {
    await embedded.db.execute(sql`create table probe (id int primary key)`);
    const insert = (id: number) => embedded.db.execute(sql`${PREPARED}insert into probe values (${id}::int) returning pg_notify('probe', ${String(id)})`);
    const heard: number[] = [];
    const unlisten = await embedded.listen('probe', () => heard.push(heard.length), () => {});
    await insert(1);
    await expect(insert(1)).rejects.toMatchObject({ cause: { code: '23505' } });
    await insert(2);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(heard).toHaveLength(2);
    await unlisten();
    expect(await rowsOf(embedded.db, sql`select id from probe order by id`)).toEqual([{ id: 1 }, { id: 2 }]);
  });
});
