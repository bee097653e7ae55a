import type { LatencySummary } from '../histogram.ts';

export interface CeilingSpec {
  origin: string;
  /** Requests in flight at once, each on a keep-alive connection of its own: oncehook's worker concurrency. */
  inFlight: number;
  warmupMs: number;
  durationMs: number;
  bodyBytes: number;
}

export interface CeilingFigures {
  /** Answered 2xx inside the measured window. */
  completed: number;
  perSecond: number;
  /** Failed or not 2xx, warm-up included. */
  errors: number;
  latencyMs: LatencySummary;
}

/** Sender → parent. */
export type CeilingMessage =
  /** The measured window opens (after the warm-up) or closes: the parent times CPU between. */
  | { type: 'window'; edge: 'start' | 'end' }
  | { type: 'done'; figures: CeilingFigures }
  | { type: 'failed'; message: string };
