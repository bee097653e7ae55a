import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, shopConfig, shopifyDelivery } from '../support/deliveries.ts';
import { engine, type TestDatabase } from '../support/engine.ts';
import { waitFor } from '../support/forwarding.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { freshProxiedDatabase, type FaultyProxy } from '../support/tcp-proxy.ts';
import { TASK_STATES } from '../../src/store/decisions.ts';

const DATABASE_FIGURES = [
  'oncehook_tasks',
  'oncehook_alert_messages',
  'oncehook_confirmed_effects',
  'oncehook_tasks_unresolved',
  'oncehook_tasks_unresolved_oldest_seconds',
  'oncehook_tasks_needing_attention',
  'oncehook_tasks_needing_attention_oldest_seconds',
];

let gateway: TestGateway;
let database: TestDatabase;
let proxy: FaultyProxy | undefined;

beforeAll(async () => {
  let reached: TestDatabase;
  ({ database, reached, proxy } = await freshProxiedDatabase());
  gateway = await startTestGateway(shopConfig(), { database: reached });
});
afterAll(async () => {
  await gateway?.close();
  await proxy?.close();
  await database?.drop();
});

/** The samples of the figures read from the database, by series. */
async function databaseSamples(): Promise<Map<string, number>> {
  const text = await (await fetch(`${gateway.url}/metrics`)).text();
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [series, value] = line.split(' ');
    if (series && DATABASE_FIGURES.includes(series.replace(/\{.*/, ''))) samples.set(series, Number(value));
  }
  return samples;
}

/**
 * Makes the task tally's reads fail until the returned function is called. PostgreSQL goes away for real
 * (the proxy refuses connections); embedded PGlite lives and dies with the process, so there the table the
 * tally reads first is renamed away: a read that really fails, on the same path, and answers again after.
 */
async function failReads(): Promise<() => Promise<void>> {
  if (proxy) {
    await proxy.refuse();
    return () => proxy!.restore();
  }
  await gateway.store.db.execute(sql`alter table task_refs rename to task_refs_away`);
  return async () => {
    await gateway.store.db.execute(sql`alter table task_refs_away rename to task_refs`);
  };
}

describe(`/metrics figures read from the database (${engine()})`, () => {
  it('names every task state while the database answers, 0 where none', async () => {
    expect((await post(gateway.url, 'shop', shopifyDelivery({ eventId: 'e-one' }))).status).toBe(200);
    const samples = await databaseSamples();
    for (const state of Object.values(TASK_STATES)) expect(samples.get(`oncehook_tasks{state="${state}"}`)).toBeGreaterThanOrEqual(0);
    expect(samples.get('oncehook_tasks{state="cancelled"}')).toBe(0);
  });

  // A 0 would resolve an alert on tasks needing attention while nobody can see them; absent() is what fires.
  it('leaves them all out while the read fails, and shows them again once it answers', async () => {
    expect([...(await databaseSamples()).keys()].map((series) => series.replace(/\{.*/, ''))).toEqual(expect.arrayContaining(DATABASE_FIGURES));
    const restore = await failReads();
    try {
      // A scrape reuses a tally for a second: wait for one read after the failure began.
      await waitFor(async () => (await databaseSamples()).size === 0, 5_000);
    } finally {
      await restore();
    }
    const back = await waitFor(async () => {
      const samples = await databaseSamples();
      return samples.size > 0 && samples;
    }, 10_000);
    expect(back.get('oncehook_tasks_unresolved')).toBeGreaterThanOrEqual(0);
    // A series per state for the tasks and for the alerts' messages; one for each of the others.
    expect(back.size).toBe(DATABASE_FIGURES.length - 2 + 2 * Object.values(TASK_STATES).length);
  });
});
