/** How long a SIGTERM waits for in-flight work: the gateway applies it, the CLI's help shows it. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 25_000;
