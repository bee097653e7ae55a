import { describe, expect, it } from 'vitest';
import { percentile, Samples, summarize } from '../../bench/histogram.ts';

describe('bench latency percentiles', () => {
  it('takes the nearest rank: the smallest sample with at least q of them at or below it', () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(sorted, 0.5)).toBe(50);
    expect(percentile(sorted, 0.99)).toBe(99);
    expect(percentile(sorted, 0.999)).toBe(100);
    expect(percentile(sorted, 1)).toBe(100);
    expect(percentile(sorted, 0)).toBe(1);
  });

  it('reports a latency some request really had, never an interpolation', () => {
    expect(percentile([1, 10], 0.5)).toBe(1);
    expect(percentile([1, 10], 0.51)).toBe(10);
  });

  it('is NaN without samples rather than a made-up zero', () => {
    expect(percentile([], 0.5)).toBeNaN();
    expect(summarize([]).mean).toBeNaN();
  });

  it('keeps every sample as it grows and sorts numerically, not as strings', () => {
    const samples = new Samples();
    for (let i = 200_000; i > 0; i--) samples.add(i / 10);
    const summary = samples.summary();
    expect(summary.count).toBe(200_000);
    expect(summary.p50).toBe(10_000);
    expect(summary.p99).toBe(19_800);
    expect(summary.max).toBe(20_000);
    expect(summary.mean).toBeCloseTo(10_000.05, 5);
  });
});
