/**
 * Latency samples kept whole and sorted once at the end: a few million doubles are tens of megabytes, and
 * exact percentiles need no bucket-precision argument when a later run is compared with this one.
 */
export class Samples {
  #values = new Float64Array(1 << 16);
  #count = 0;

  add(value: number): void {
    if (this.#count === this.#values.length) {
      const grown = new Float64Array(this.#values.length * 2);
      grown.set(this.#values);
      this.#values = grown;
    }
    this.#values[this.#count++] = value;
  }

  get count(): number {
    return this.#count;
  }

  summary(): LatencySummary {
    return summarize(this.#values.subarray(0, this.#count).slice().sort());
  }
}

export interface LatencySummary {
  count: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

/**
 * Nearest-rank percentile of ascending samples: the smallest sample with at least q of them at or below it.
 * No interpolation, so every figure reported is a latency some request really had.
 */
export function percentile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil(q * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export function summarize(sorted: ArrayLike<number>): LatencySummary {
  let sum = 0;
  for (let i = 0; i < sorted.length; i++) sum += sorted[i]!;
  return {
    count: sorted.length,
    mean: sorted.length ? sum / sorted.length : Number.NaN,
    p50: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p99: percentile(sorted, 0.99),
    p999: percentile(sorted, 0.999),
    max: sorted.length ? sorted[sorted.length - 1]! : Number.NaN,
  };
}
