import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { Forwarder } from '../../src/forward/forwarder.ts';
import { createMetrics } from '../../src/metrics.ts';
import { openStore, type Store } from '../../src/store/connect.ts';
import { migrate } from '../../src/store/migrate.ts';
import { shopConfig } from '../support/deliveries.ts';
import { engine, type TestDatabase } from '../support/engine.ts';
import { waitFor } from '../support/forwarding.ts';
import { capture } from '../support/log-lines.ts';
import { freshProxiedDatabase, type FaultyProxy } from '../support/tcp-proxy.ts';

const FAILING = 'the forwarder could not read its queue; trying again';
const RECOVERED = 'the forwarder reads its queue again';

let database: TestDatabase;
let proxy: FaultyProxy | undefined;
let store: Store;

beforeAll(async () => {
  let reached: TestDatabase;
  ({ database, reached, proxy } = await freshProxiedDatabase());
  store = await openStore({ databaseUrl: reached.url });
  await migrate(store, reached.url);
});
afterAll(async () => {
  await store?.close();
  await proxy?.close();
  await database?.drop();
});

/**
 * Makes the queue's statements fail until the returned function is called. PostgreSQL goes away for real (the
 * proxy refuses connections); embedded PGlite lives and dies with the process, so there the table the claim
 * reads is renamed away: a statement that really fails, on the same path, and answers again after.
 */
async function failQueue(): Promise<() => Promise<void>> {
  if (proxy) {
    await proxy.refuse();
    return () => proxy!.restore();
  }
  await store.db.execute(sql`alter table tasks rename to tasks_away`);
  return async () => {
    await store.db.execute(sql`alter table tasks_away rename to tasks`);
  };
}

describe(`the forwarder while the database is down (${engine()})`, () => {
  it('logs the first failure of an outage with its stack, each repeat in one line, and the recovery once', async () => {
    const { logger, lines } = capture();
    const { config } = parseConfig(JSON.stringify(shopConfig({ crm: { url: 'http://127.0.0.1:9/crm' } })), 'test');
    const forwarder = new Forwarder({ config, store, logger, metrics: createMetrics() }, { pollMs: 50 });
    await forwarder.start();
    const said = (message: string) => lines.filter((line) => line.msg === message);
    const withStack = () => lines.filter((line) => typeof line.err?.stack === 'string');
    try {
      forwarder.wake();
      let restore = await failQueue();
      await waitFor(() => said(FAILING).length >= 5);
      await restore();
      await waitFor(() => said(RECOVERED).length === 1);

      const [first, ...repeats] = said(FAILING);
      expect(withStack()).toEqual([first]);
      for (const repeat of repeats) {
        expect(repeat).not.toHaveProperty('err');
        expect(repeat.error).toMatch(/^[^\n]+$/);
      }
      // A line every five polls at most, each with the count so far.
      const counts = repeats.map((line) => line.failures as number);
      expect(counts.every((n, i) => n > (i === 0 ? 1 : counts[i - 1]!))).toBe(true);
      expect(said(RECOVERED)[0]).toMatchObject({ level: 30 });
      expect(said(RECOVERED)[0]!.failures).toBeGreaterThanOrEqual(counts.at(-1)!);

      // A new outage is a new first failure: its stack is logged again.
      restore = await failQueue();
      await waitFor(() => withStack().length === 2);
      await restore();
      await waitFor(() => said(RECOVERED).length === 2);
    } finally {
      await forwarder.stop();
    }
  });
});
