import type { LatencySummary } from '../histogram.ts';

export const QUEUE = 'bench-forward';

export interface BossSpec {
  databaseUrl: string;
  downstreamOrigin: string;
  concurrency: number;
  warmupMs: number;
  durationMs: number;
  batchSize: number;
  workers: number;
  bodyBytes: number;
  progressMs: number;
}

export interface SendFigures {
  perSecond: number;
  latencyMs: LatencySummary;
  errors: number;
  /** Jobs the send phase left queued (warm-up included): the work phase's backlog. */
  backlog: number;
  poolMax: number;
  pollingIntervalSeconds: number;
  version: string;
}

/** Parent → runner. */
export type BossCommand = { type: 'send'; spec: BossSpec } | { type: 'work' } | { type: 'probe'; marker: string };

/** Runner → parent. */
export type BossMessage =
  | { type: 'progress'; line: string }
  | { type: 'sent'; figures: SendFigures }
  | { type: 'working' }
  | { type: 'probed'; sentAt: number }
  | { type: 'failed'; message: string };
