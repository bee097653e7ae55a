import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.ts';
import type { Verdict } from '../../../src/forward/classify.ts';
import { decide } from '../../../src/forward/decide.ts';
import { Routes } from '../../../src/forward/routes.ts';
import type { ClaimedTask } from '../../../src/store/atomic.ts';
import type { TaskState } from '../../../src/store/decisions.ts';

const config = parseConfig(
  JSON.stringify({
    sources: { shop: { adapter: 'shopify', secrets: ['s'], actions: { crm: { url: 'http://crm.test/tasks', idempotency: 'key', maxAttempts: 3 } } } },
  }),
  'test',
).config;
const route = new Routes(config, 1000).get('shop', 'crm');

function claimed(priorState: TaskState, attempts: number, mode: ClaimedTask['mode'] = 'send'): ClaimedTask {
  return {
    id: 't1', source: 'shop', action: 'crm', eventId: 'e1', topic: null, body: new Uint8Array(), contentType: null,
    attempts, lookups: 0, mode, attemptId: 1, reason: null, priorState,
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
    ['rejected', 2, 'failed'],
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
