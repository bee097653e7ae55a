import { describe, expect, it } from 'vitest';
import { heldWords, originUses } from '../../../src/operate/explain.ts';
import { destinationsView, tasksView } from '../../../src/cli/views.ts';

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
