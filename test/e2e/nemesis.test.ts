import { describe, expect, it } from 'vitest';
import { FAULTS, runNemesis } from '../support/nemesis.ts';

const FAULT_COUNT = 20;

// `npm run test:nemesis -- --faults 1000` is the long form of this test.
describe('nemesis: two gateways through cut, stalled, slowed and refused connections, kills and PostgreSQL restarts', () => {
  it(`${FAULT_COUNT} faults lose nothing answered, double no effect, fake no success and accept no event twice`, async () => {
    const summary = await runNemesis({
      faults: FAULT_COUNT,
      faultMs: [100, 300],
      gapMs: [50, 150],
      log: process.env.NEMESIS_LOG ? console.log : undefined,
    });
    const seed = `seed ${summary.seed}`;
    expect(summary.lost, seed).toEqual([]);
    expect(summary.doubled, seed).toEqual([]);
    expect(summary.phantom, seed).toEqual([]);
    expect(summary.duplicatesAccepted, seed).toEqual([]);
    expect(summary.other, seed).toEqual([]);
    // Two cycles: every kind of fault was played, and work got through.
    for (const fault of FAULTS) expect(summary.faults[fault], `${fault} (${seed})`).toBeGreaterThan(0);
    expect(summary.accepted).toBeGreaterThan(FAULT_COUNT);
    expect(summary.effects).toBeGreaterThan(FAULT_COUNT);
  }, 120_000);
});
