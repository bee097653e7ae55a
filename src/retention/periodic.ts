/**
 * Runs `pass` every `intervalMs`, and on demand, never two at once: a pass asked for while one runs starts
 * after it. A failed pass on the timer goes to `onError`; one asked for by `runOnce` rejects to its caller.
 * The timer does not keep the process alive.
 */
export function periodic<T>(intervalMs: number, pass: () => Promise<T>, onError: (error: unknown) => void) {
  let running: Promise<unknown> = Promise.resolve();
  const runOnce = (): Promise<T> => {
    const result = running.then(pass);
    running = result.catch(() => {});
    return result;
  };
  const timer = setInterval(() => runOnce().catch(onError), intervalMs);
  timer.unref();
  return {
    runOnce,
    /** Stops the timer and waits for the pass in progress. */
    async stop(): Promise<void> {
      clearInterval(timer);
      await running;
    },
  };
}
