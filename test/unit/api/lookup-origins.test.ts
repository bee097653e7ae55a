import { describe, expect, it } from 'vitest';
import { originUses } from '../../../src/api/explain.ts';
import { destinationsView } from '../../../src/cli/views.ts';

describe('what a lookup origin reads as', () => {
  it("lists an origin's lookups after its sends, marked, and reads an answer without lookups as before", () => {
    expect(originUses({ actions: ['shop/crm'], lookups: ['shop/crm', 'shop/mail'] })).toBe('shop/crm, shop/crm (lookup), shop/mail (lookup)');
    expect(originUses({ actions: ['shop/crm'] })).toBe('shop/crm');
  });

  it('shows in the CLI', () => {
    const origin = { origin: 'https://search.example', status: 'open', pausedAt: null, actions: [], lookups: ['shop/crm'], limit: null, inFlight: 0, waiting: 0, waitingLookups: 2, pausedReason: null };
    expect(destinationsView({ items: [origin] })).toMatch(/^https:\/\/search\.example\s+open\s+—\s+shop\/crm \(lookup\)\s+—\s+0\s+0 \+ 2 lookups/m);
  });
});
