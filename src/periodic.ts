/**
 * Runs `pass` every `intervalMs`, and on demand, never two at once. A tick that finds a pass running or
 * waiting to is skipped: a pass slower than the interval queued one more per tick, and a stop waited for them
 * all. A pass asked for by `runOnce` while one runs starts after it, since its caller waits for a whole pass.
 * A failed pass on the timer goes to `onError`; one asked for by `runOnce` rejects to its caller.
 * The timer does not keep the process alive.
 */
export function periodic<T>(intervalMs: number, pass: () => Promise<T>, onError: (error: unknown) => void) {
  let last: Promise<unknown> = Promise.resolve();
  let unfinished = 0;
  const runOnce = (): Promise<T> => {
    unfinished++;
    const result = last.then(pass).finally(() => unfinished--);
    last = result.catch(() => {});
    return result;
  };
  const timer = setInterval(() => {
    if (unfinished === 0) runOnce().catch(onError);
  }, intervalMs);
  timer.unref();
  return {
    runOnce,
    /** Stops the timer and waits for the pass in progress (and any a `runOnce` caller still waits for). */
    async stop(): Promise<void> {
      clearInterval(timer);
      await last;
    },
  };
}
