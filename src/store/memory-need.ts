import { totalmem } from 'node:os';

const MiB = 1024 * 1024;

/**
 * The memory the embedded default needs: its peak, on a first start or a restart, with room to spare
 * (test/e2e/embedded-memory.test.ts holds it to this; docs/performance.md has the figures).
 */
export const EMBEDDED_NEEDS_BYTES = 400 * MiB;

/**
 * The memory this process can have: the machine's, or less where a container's limit says so. Node reads the
 * limit from the cgroup (`memory.max`, or v1's `memory.limit_in_bytes`); no limit reads as 0 or as a number
 * past the machine's.
 */
export function memoryLimit(): number {
  const constrained = process.constrainedMemory();
  return constrained > 0 ? Math.min(constrained, totalmem()) : totalmem();
}

/** The start-up warning for a process that has less than the embedded default needs, or null. */
export function memoryShortfall(limitBytes: number, neededBytes = EMBEDDED_NEEDS_BYTES): string | null {
  if (limitBytes >= neededBytes) return null;
  return (
    `only ${Math.floor(limitBytes / MiB)} MiB of memory here, and the embedded database needs about ${neededBytes / MiB} MiB: ` +
    'it may be killed for want of memory. Give it more, or set DATABASE_URL to use PostgreSQL'
  );
}
