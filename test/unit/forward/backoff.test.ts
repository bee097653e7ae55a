import { describe, expect, it } from 'vitest';
import { backoffMs, parseRetryAfter } from '../../../src/forward/backoff.ts';

const BACKOFF = { initialMs: 1000, maxMs: 60_000 };

describe('backoffMs: exponential, full jitter, capped', () => {
  it('draws up to initialMs·2^(attempt−1)', () => {
    expect([1, 2, 3, 4].map((attempt) => backoffMs(attempt, BACKOFF, () => 0.999_999))).toEqual([999, 1999, 3999, 7999]);
    expect(backoffMs(3, BACKOFF, () => 0)).toBe(0);
  });

  it('never exceeds maxMs, however many attempts', () => {
    expect(backoffMs(40, BACKOFF, () => 0.999_999)).toBeLessThan(BACKOFF.maxMs);
  });
});

describe('parseRetryAfter', () => {
  it('reads delay-seconds', () => {
    expect(parseRetryAfter('120')).toEqual({ delayMs: 120_000 });
    expect(parseRetryAfter(' 0 ')).toEqual({ delayMs: 0 });
  });

  it('reads an HTTP date as a moment, left for the database clock to compare', () => {
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT')).toEqual({ at: new Date('2015-10-21T07:28:00Z') });
  });

  it('ignores what it cannot read', () => {
    expect(parseRetryAfter(undefined)).toBeNull();
    expect(parseRetryAfter('soon')).toBeNull();
    expect(parseRetryAfter('-5')).toBeNull();
  });
});
