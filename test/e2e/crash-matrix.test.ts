import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PHASES, runCrashMatrix } from '../support/crash.ts';
import { freshPostgresDatabase, type TestDatabase } from '../support/engine.ts';

const KILLS = 20;

let database: TestDatabase;
beforeAll(async () => {
  database = await freshPostgresDatabase();
});
afterAll(async () => database?.drop());

// `npm run chaos -- --kills 200` is the long form of this test.
describe('crash matrix: kill -9 at random moments, restart, and check the invariants after every kill', () => {
  it(`${KILLS} kills while deliveries stream in and attempts are in flight lose nothing and send nothing twice`, async () => {
    const summary = await runCrashMatrix({ kills: KILLS, databaseUrl: database.url!, log: process.env.CHAOS_LOG ? console.log : undefined });
    expect(summary.violations, `seed ${summary.seed}`).toEqual([]);
    expect(summary.deliveries).toBeGreaterThan(KILLS);
    expect(summary.effects).toBeGreaterThan(KILLS);
    for (const phase of PHASES) expect(summary.phases[phase], `kills that landed in ${phase} (seed ${summary.seed})`).toBeGreaterThan(0);
  }, 120_000);
});
