import { afterEach } from 'vitest';

/**
 * For a file whose every test starts its own gateway and downstreams (an origin's cooldown or pause must not carry
 * over to the next test): returns `closing`, which registers what a test started, and closes it all after each
 * test, the last started first.
 */
export function closeAfterEach(): <T extends { close(): Promise<void> }>(started: T) => T {
  const open: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const started of open.splice(0).reverse()) await started.close();
  });
  return (started) => (open.push(started), started);
}
