/** How long a SIGTERM waits for in-flight work: the gateway applies it, the CLI's help shows it. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 25_000;

/**
 * How long past an action's `timeoutMs` a silent worker's lease is kept. A dead worker's task is promised to be
 * reclaimed within `timeoutMs` plus 30 s (docs/reliability.md, "A crash"); a reclaim comes at the next look at the
 * queue after the lease ends — within the 2 s poll of an idle worker — so the lease keeps 3 s of that for it. A
 * longer grace breaks the promise: allowed, and warned of at start.
 */
export const DEFAULT_LEASE_GRACE_MS = 27_000;
