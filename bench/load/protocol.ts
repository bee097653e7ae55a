import type { LatencySummary } from '../histogram.ts';

/**
 * What the parent asks the load generator for. `closed`: `concurrency` virtual clients, each sending its next
 * request when its previous one is answered. `burst`: `count` copies of one delivery, all at once, on
 * connections opened beforehand, so the burst measures the gateway and not TCP handshakes.
 */
export type LoadSpec = ClosedLoopSpec | BurstSpec;

export interface ClosedLoopSpec {
  kind: 'closed';
  /** The label of progress lines. */
  label: string;
  origin: string;
  path: string;
  concurrency: number;
  /**
   * Null: each client sends as soon as its previous request is answered. A number: requests fall due at this
   * rate overall, a sender's steady traffic, and each latency counts from when its request fell due, so a
   * stall that holds every client back is measured in full rather than hidden by the clients waiting.
   */
  ratePerSecond: number | null;
  warmupMs: number;
  durationMs: number;
  /** Share (0–1) of requests that replay an earlier, already answered delivery byte for byte. */
  duplicates: number;
  /**
   * Deliveries signed before timing starts. A phase that outruns them signs the rest as it goes, and says
   * how many it had to; `cycle` reuses them instead (for a server that does not deduplicate).
   */
  presign: number;
  cycle: boolean;
  bodyBytes: number;
  /** Keeps identities unique across runs on one database. */
  runId: string;
  seed: number;
  progressMs: number;
}

export interface BurstSpec {
  kind: 'burst';
  label: string;
  origin: string;
  path: string;
  count: number;
  bodyBytes: number;
  runId: string;
}

export interface LoadResult {
  label: string;
  /** Completed inside the measured window (warm-up excluded). */
  completed: number;
  windowMs: number;
  perSecond: number;
  /** Completions in the window answered `200` with `decision: accepted`, per second. */
  acceptedPerSecond: number;
  /** HTTP status (or `error` for a failed request) → count, over the whole run, warm-up included. */
  statuses: Record<string, number>;
  /** The gateway's `decision` → count, over the whole run. */
  decisions: Record<string, number>;
  /** What the run sent: new deliveries and exact replays, over the whole run. */
  sent: { unique: number; duplicates: number };
  /** Requests whose delivery was signed during timing because the pre-signed ones ran out. */
  signedDuringRun: number;
  errors: number;
  firstError: string | null;
  latencyMs: LatencySummary;
  /** Share of one core the generator itself used while it sent: near 1.0, it may be what limits the rate. */
  generatorCpu: number;
}

export type LoadMessage =
  | { type: 'progress'; label: string; elapsedMs: number; perSecond: number; p99Ms: number; maxMs: number; errors: number }
  /** The measured window opens (after the warm-up) or closes: the parent samples CPU and memory between. */
  | { type: 'window'; edge: 'start' | 'end' }
  | { type: 'done'; result: LoadResult }
  | { type: 'failed'; message: string };
