import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.ts';
import type { RetryAfter } from '../../../src/forward/backoff.ts';
import type { Verdict } from '../../../src/forward/classify.ts';
import { decide, LONGEST_RETRY_AFTER_MS } from '../../../src/forward/decide.ts';
import { Routes } from '../../../src/forward/routes.ts';
import type { ClaimedTask } from '../../../src/store/atomic/claim.ts';
import type { TaskState } from '../../../src/store/decisions.ts';

/** The route of one action of source `shop`, configured as `action`. */
function routeOf(name: string, action: object) {
  const sources = { shop: { adapter: 'shopify', secrets: ['s'], actions: { [name]: action } } };
  return new Routes(parseConfig(JSON.stringify({ sources }), 'test').config, 1000).get('shop', name);
}
const route = routeOf('crm', { url: 'http://crm.test/tasks', idempotency: 'key', maxAttempts: 3 });

function claimed(priorState: TaskState, attempts: number, mode: ClaimedTask['mode'] = 'send'): ClaimedTask {
  return {
    id: 't1', source: 'shop', action: 'crm', eventId: 'e1', topic: null, body: new Uint8Array(), contentType: null,
    attempts, lookups: 0, mode, claim: 1, reason: null, priorState, requestUrl: null, lookupUrl: null,
  };
}

const verdicts: Record<string, Verdict> = {
  success: { class: 'success', status: 201, reference: 'r1' },
  retryable: { class: 'retryable', status: 503, error: '503', retryAfter: { delayMs: 2000 }, coolDown: true },
  notSent: { class: 'not_sent', status: null, error: 'ECONNREFUSED' },
  refused: { class: 'refused', status: 401, error: '401' },
  rejected: { class: 'rejected', status: 422, error: '422' },
};

describe('decide: a resend of an unknown outcome ends it only by confirming something', () => {
  it.each([
    ['success', 2, 'succeeded'],
    // "This key was already used" is a rejection to some downstreams: the first attempt may be the effect.
    ['rejected', 2, 'needs_review'],
    ['retryable', 2, 'outcome_unknown'],
    ['notSent', 2, 'outcome_unknown'],
    ['refused', 2, 'outcome_unknown'],
    // The last allowed attempt confirmed nothing: the claim asks the lookup or a person, never "failed".
    ['retryable', 3, 'outcome_unknown'],
  ])('from outcome_unknown, %s at attempt %i → %s', (verdict, attempts, state) => {
    expect(decide(verdicts[verdict]!, claimed('outcome_unknown', attempts), route).state).toBe(state);
  });

  it('keeps what the answer says of the destination and of the wait', () => {
    const retry = decide(verdicts.retryable!, claimed('outcome_unknown', 2), route);
    expect(retry).toMatchObject({ delayMs: 2000, destination: { origin: 'http://crm.test', pause: null } });
    expect(decide(verdicts.refused!, claimed('outcome_unknown', 2), route).destination?.pause).toMatch(/401/);
  });

  it.each([
    ['retryable', 2, 'pending'],
    ['notSent', 2, 'pending'],
    ['refused', 2, 'failed'],
    ['retryable', 3, 'failed'],
  ])('from pending, nothing sent before may have taken effect: %s at attempt %i → %s', (verdict, attempts, state) => {
    expect(decide(verdicts[verdict]!, claimed('pending', attempts), route).state).toBe(state);
  });
});

describe('decide: waits', () => {
  const withLookup = routeOf('mail', {
    url: 'http://mail.test/send',
    lookup: 'http://mail.test/sent?key={key}',
    timeoutMs: 4000,
    backoff: { initialMs: 10, maxMs: 60_000 },
  });
  const unknown: Verdict = { class: 'unknown', status: 500, error: '500 (the downstream may have acted)' };

  it("an unknown outcome is looked up no sooner than the action's timeout: the downstream may still be at work", () => {
    for (let i = 0; i < 20; i++) {
      const decision = decide(unknown, { ...claimed('pending', 1), action: 'mail' }, withLookup);
      expect(decision).toMatchObject({ state: 'outcome_unknown' });
      expect(decision.delayMs).toBeGreaterThanOrEqual(4000);
    }
  });

  it('a Retry-After past an hour (or a longer backoff) is cut to it, in seconds or as a date', () => {
    const asked = (retryAfter: RetryAfter) =>
      decide({ class: 'retryable', status: 429, error: '429', retryAfter, coolDown: true }, claimed('pending', 1), route);
    const longest = Math.max(route.config.backoff.maxMs, LONGEST_RETRY_AFTER_MS);
    expect(asked({ delayMs: 99_999_999_999_000 })).toMatchObject({ delayMs: longest, notBefore: null, decision: expect.stringMatching(/cut/) });
    expect(asked({ at: new Date(Date.now() + longest * 10) })).toMatchObject({ delayMs: longest, notBefore: null });
    const soon = new Date(Date.now() + 5000);
    expect(asked({ at: soon })).toMatchObject({ notBefore: soon });
    expect(asked({ delayMs: 5000 })).toMatchObject({ delayMs: 5000 });
  });
});

describe("decide: a lookup's answer about its own origin", () => {
  const searched = routeOf('mail', { url: 'http://mail.test/send', lookup: 'http://search.test/sent?key={key}', backoff: { initialMs: 10, maxMs: 60_000 } });
  const lookup = { ...claimed('outcome_unknown', 1, 'lookup'), action: 'mail', lookups: 1 };
  const standing = (status: number, standing: NonNullable<Extract<Verdict, { class: 'lookup_unanswered' }>['standing']>): Verdict => ({
    class: 'lookup_unanswered',
    status,
    error: `${status}`,
    standing,
  });

  it("429 cools the lookup's origin for its Retry-After, capped as a send's; the task stays unknown, the lookup not counted", () => {
    expect(decide(standing(429, { cooling: true, retryAfter: { delayMs: 3000 } }), lookup, searched)).toMatchObject({
      state: 'outcome_unknown',
      delayMs: 3000,
      destination: { origin: 'http://search.test', pause: null },
      lookupNotCounted: true,
    });
    const capped = decide(standing(429, { cooling: true, retryAfter: { delayMs: 99_999_999_999_000 } }), lookup, searched);
    expect(capped).toMatchObject({ delayMs: LONGEST_RETRY_AFTER_MS, decision: expect.stringMatching(/cut/) });
    // Without Retry-After, at least the initial backoff: a cooldown whose jitter drew zero would be none.
    for (let i = 0; i < 20; i++) expect(decide(standing(503, { cooling: true, retryAfter: null }), lookup, searched).delayMs).toBeGreaterThanOrEqual(10);
  });

  it("401 pauses the lookup's origin, naming the task; never failed, since the effect may exist", () => {
    expect(decide(standing(401, { cooling: false }), lookup, searched)).toMatchObject({
      state: 'outcome_unknown',
      destination: { origin: 'http://search.test', pause: "401 refused oncehook's lookup for t1" },
      lookupNotCounted: true,
    });
  });

  it('any other unanswered lookup is counted, and touches no origin', () => {
    const other = decide({ class: 'lookup_unanswered', status: 500, error: '500' }, lookup, searched);
    expect(other).toMatchObject({ state: 'outcome_unknown', destination: null });
    expect(other.lookupNotCounted).toBeUndefined();
  });
});

