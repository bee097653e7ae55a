import type { LoadResult } from '../../bench/load/protocol.ts';
import type { CpuShares } from '../../bench/proc.ts';

/** A load's figures for the bench's report tests: 1,000 answered in a second, 900 accepted, at this p99. */
export function loadResult(p99: number, overrides: Partial<LoadResult> = {}): LoadResult {
  return {
    label: 'x',
    completed: 1000,
    windowMs: 1000,
    perSecond: 1000,
    acceptedPerSecond: 900,
    statuses: { 200: 1000 },
    decisions: { accepted: 900, duplicate_delivery: 100 },
    sent: { unique: 900, duplicates: 100 },
    signedDuringRun: 0,
    errors: 0,
    firstError: null,
    latencyMs: { count: 1000, mean: p99 / 2, p50: p99 / 2, p90: p99 * 0.9, p99, p999: p99, max: p99 },
    generatorCpu: 0.2,
    ...overrides,
  };
}

/** CPU over a window: these processes' shares of a core, PostgreSQL's, the machine's. */
export const cpuShares = (processes: Record<string, number>, postgres = 0.4, machine = 0.9): CpuShares => ({ processes, postgres, machine, cores: 2 });
