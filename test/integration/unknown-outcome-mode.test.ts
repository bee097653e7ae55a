import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OutcomeRule } from '../../src/store/atomic/claim.ts';
import { rowsOf } from '../../src/store/rows.ts';
import { freshStore, type TestStore } from '../support/engine.ts';

let t: TestStore;
beforeAll(async () => {
  t = await freshStore();
});
afterAll(async () => t?.close());

const HOUR = 3_600_000;
const keyed: OutcomeRule = { keyed: true, keyRetentionMs: HOUR, lookup: true, maxAttempts: 3 };
const unkeyed: OutcomeRule = { ...keyed, keyed: false };
/** A task's counts, and how long ago its first attempt was, in the database's time (null: never attempted). */
type Task = { attempts: number; lookups: number; firstAttemptAgoMs: number | null };

/** What the claim of an unknown outcome would do now, by the rule the claim and the views share. */
async function modeOf(task: Task, rule: OutcomeRule): Promise<string> {
  const first = task.firstAttemptAgoMs === null ? sql`null::timestamptz` : sql`now() - ${task.firstAttemptAgoMs} * interval '1 millisecond'`;
  const [row] = await rowsOf<{ mode: string }>(
    t.store.db,
    sql`select oncehook_unknown_outcome_mode(${rule.keyed}, ${rule.keyRetentionMs}, ${rule.lookup}, ${rule.maxAttempts},
          ${task.attempts}, ${task.lookups}, ${first}) as mode`,
  );
  return row!.mode;
}

// An unknown outcome of an action with a lookup: whether its claim asks the lookup, which a paused lookup origin holds.
const cases: [name: string, task: Task, rule: OutcomeRule, asks: boolean][] = [
  ['keyed, attempts left, key still kept: a resend', { attempts: 1, lookups: 0, firstAttemptAgoMs: HOUR - 1 }, keyed, false],
  ['keyed, resend even with the lookups spent', { attempts: 1, lookups: 3, firstAttemptAgoMs: 1000 }, keyed, false],
  ['keyed, first attempt older than the key retention: a lookup', { attempts: 1, lookups: 0, firstAttemptAgoMs: HOUR }, keyed, true],
  ['keyed, attempts spent: a lookup', { attempts: 3, lookups: 2, firstAttemptAgoMs: 1000 }, keyed, true],
  ['keyed, never attempted: a lookup (the resend row needs a first attempt)', { attempts: 0, lookups: 0, firstAttemptAgoMs: null }, keyed, true],
  ['no key: a lookup', { attempts: 1, lookups: 2, firstAttemptAgoMs: 1000 }, unkeyed, true],
  ['no key, lookups spent: review', { attempts: 1, lookups: 3, firstAttemptAgoMs: 1000 }, unkeyed, false],
  ['keyed, key forgotten, lookups spent: review', { attempts: 1, lookups: 3, firstAttemptAgoMs: 2 * HOUR }, keyed, false],
];

describe('oncehook_unknown_outcome_mode asks the lookup', () => {
  it.each(cases)('%s', async (_, task, rule, asks) => {
    expect((await modeOf(task, rule)) === 'lookup').toBe(asks);
  });
});

describe('oncehook_unknown_outcome_mode', () => {
  it('resends under a live key, else looks up while lookups are left, else sends to review; an action without a lookup never looks up', async () => {
    expect(await modeOf({ attempts: 1, lookups: 3, firstAttemptAgoMs: 1000 }, keyed)).toBe('send');
    expect(await modeOf({ attempts: 1, lookups: 2, firstAttemptAgoMs: 2 * HOUR }, keyed)).toBe('lookup');
    expect(await modeOf({ attempts: 1, lookups: 3, firstAttemptAgoMs: 2 * HOUR }, keyed)).toBe('review');
    expect(await modeOf({ attempts: 1, lookups: 0, firstAttemptAgoMs: 2 * HOUR }, { ...keyed, lookup: false })).toBe('review');
    expect(await modeOf({ attempts: 1, lookups: 0, firstAttemptAgoMs: 1000 }, { ...keyed, lookup: false })).toBe('send');
  });
});
