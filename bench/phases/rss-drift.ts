import type { RssSampler } from '../proc.ts';

export interface RssDrift {
  samples: Array<{ atSeconds: number; rssBytes: number }>;
  /** Median RSS over the second fifth of the window, once warm. */
  baselineRssBytes: number;
  /** Median RSS over the last fifth. */
  finalRssBytes: number;
  /** (final − baseline) ÷ baseline. */
  growth: number;
}

/**
 * How resident memory moved over a measured window of `seconds` that opened at `windowAt` (the sampler's
 * clock). JIT code, pools and caches fill early and are not a leak, so the baseline is taken once warm; RSS
 * swings with every major GC, so each end is the median of a fifth of the samples, not one sample.
 */
export function rssDrift(rss: RssSampler, windowAt: number, seconds: number): RssDrift {
  const samples = rss.samples
    .map((s) => ({ atSeconds: s.atSeconds - windowAt, rssBytes: s.rssBytes }))
    .filter((s) => s.atSeconds >= 0 && s.atSeconds <= seconds + 1);
  const baseline = median(samples.filter((s) => s.atSeconds >= seconds * 0.2 && s.atSeconds < seconds * 0.4).map((s) => s.rssBytes));
  const final = median(samples.filter((s) => s.atSeconds >= seconds * 0.8).map((s) => s.rssBytes));
  return { samples, baselineRssBytes: baseline, finalRssBytes: final, growth: (final - baseline) / baseline };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.floor((sorted.length - 1) / 2)]! : Number.NaN;
}
