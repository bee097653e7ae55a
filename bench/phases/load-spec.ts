import type { ClosedLoopSpec, LoadResult } from '../load/protocol.ts';
import type { Context } from './context.ts';

/** The closed loop every load phase drives, from the run's options; a phase overrides what differs. */
export function closedLoop(ctx: Context, target: { label: string; origin: string }, overrides: Partial<ClosedLoopSpec> = {}): ClosedLoopSpec {
  const { options } = ctx;
  const durationMs = options.duration * 1000;
  return {
    kind: 'closed',
    label: target.label,
    origin: target.origin,
    path: '/in/shop',
    concurrency: options.concurrency,
    ratePerSecond: null,
    warmupMs: options.warmup * 1000,
    durationMs,
    duplicates: options.duplicates,
    presign: Math.ceil((options.presignRate * (durationMs + options.warmup * 1000)) / 1000),
    cycle: false,
    bodyBytes: options.bodyBytes,
    // Unique per run and phase, so a phase never replays another's deliveries by accident.
    runId: `${target.label}-${process.pid}-${Date.now().toString(36)}`,
    seed: options.seed,
    progressMs: 2000,
    ...overrides,
  };
}

/**
 * No errors, every new delivery `accepted` and every replay answered `duplicate`: what the gateway must answer.
 * oncehook names a replay `duplicate_delivery`; a gateway that cannot tell a delivery from an event, another word.
 */
export function decidedAsSent(load: LoadResult, duplicate = 'duplicate_delivery'): boolean {
  return load.errors === 0 && (load.decisions.accepted ?? 0) === load.sent.unique && (load.decisions[duplicate] ?? 0) === load.sent.duplicates;
}
