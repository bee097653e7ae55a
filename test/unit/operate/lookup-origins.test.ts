import { describe, expect, it } from 'vitest';
import { claimAsksLookup } from '../../../src/operate/destinations.ts';
import { heldWords, originUses } from '../../../src/operate/explain.ts';
import { destinationsView, tasksView } from '../../../src/cli/views.ts';

const NOW = Date.parse('2026-01-01T12:00:00Z');
const ago = (ms: number) => new Date(NOW - ms);
const HOUR = 3_600_000;
const keyed = { keyed: true, keyRetentionMs: HOUR, maxAttempts: 3 };
const unkeyed = { ...keyed, keyed: false };

// The rows of oncehook_claim_tasks's `due` CASE (migration 0019) for an unknown outcome of an action with a lookup.
const cases: [name: string, task: Parameters<typeof claimAsksLookup>[0], claim: typeof keyed, asks: boolean][] = [
  ['keyed, attempts left, key still kept: a resend', { attempts: 1, lookups: 0, firstAttemptAt: ago(HOUR - 1) }, keyed, false],
  ['keyed, resend even with the lookups spent', { attempts: 1, lookups: 3, firstAttemptAt: ago(1000) }, keyed, false],
  ['keyed, first attempt older than the key retention: a lookup', { attempts: 1, lookups: 0, firstAttemptAt: ago(HOUR) }, keyed, true],
  ['keyed, attempts spent: a lookup', { attempts: 3, lookups: 2, firstAttemptAt: ago(1000) }, keyed, true],
  ['keyed, never attempted: a lookup (the resend row needs a first attempt)', { attempts: 0, lookups: 0, firstAttemptAt: null }, keyed, true],
  ['no key: a lookup', { attempts: 1, lookups: 2, firstAttemptAt: ago(1000) }, unkeyed, true],
  ['no key, lookups spent: review', { attempts: 1, lookups: 3, firstAttemptAt: ago(1000) }, unkeyed, false],
  ['keyed, key forgotten, lookups spent: review', { attempts: 1, lookups: 3, firstAttemptAt: ago(2 * HOUR) }, keyed, false],
];

describe('claimAsksLookup', () => {
  it.each(cases)('%s', (_, task, claim, asks) => {
    expect(claimAsksLookup(task, claim, NOW)).toBe(asks);
  });
});

describe('what a held task and a lookup origin read as', () => {
  it('names the paused origin, whether the task would only ask its lookup there, and the reason', () => {
    expect(heldWords({ origin: 'https://crm.example', use: 'send', reason: '401 refused' })).toBe('held: https://crm.example is paused (401 refused)');
    expect(heldWords({ origin: 'https://search.example', use: 'lookup', reason: null })).toBe('held: lookups at https://search.example are paused');
  });

  it("lists an origin's lookups after its sends, marked, and reads an answer without lookups as before", () => {
    expect(originUses({ actions: ['shop/crm'], lookups: ['shop/crm', 'shop/mail'] })).toBe('shop/crm, shop/crm (lookup), shop/mail (lookup)');
    expect(originUses({ actions: ['shop/crm'] })).toBe('shop/crm');
  });

  it('shows both in the CLI', () => {
    const at = new Date().toISOString();
    // A task as GET /api/tasks lists it.
    const task = { id: 't_1', state: 'outcome_unknown', source: 'shop', action: 'crm', eventId: 'e_1', topic: null, attempts: 1, lookups: 0, owner: null };
    const row = { ...task, firstAttemptAt: at, resultReference: null, replayOf: null, bodyPurged: false, strandedBy: null, createdAt: at, updatedAt: at };
    const held = { ...row, heldBy: 'https://search.example', heldFor: 'lookup' as const, heldReason: "401 refused oncehook's lookup", lastError: 'timed out' };
    expect(tasksView({ items: [held], hasMore: false, nextCursor: null })).toMatch(
      /^t_1 .* held: lookups at https:\/\/search\.example are paused\n\nhttps:\/\/search\.example is paused: 401 refused oncehook's lookup$/m,
    );
    const origin = { origin: 'https://search.example', status: 'open' as const, pausedAt: null, cooldownUntil: null, actions: [], lookups: ['shop/crm'], limit: null, inFlight: 0, tokens: null, waiting: 0, waitingLookups: 2, pausedReason: null };
    expect(destinationsView({ items: [origin] })).toMatch(/^https:\/\/search\.example\s+open\s+—\s+shop\/crm \(lookup\)\s+—\s+0\s+0 \+ 2 lookups/m);
  });
});
