import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { periodic } from '../../src/periodic.ts';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

/** A pass that takes `ms`, counting how many started and how many ran at once. */
function slowPass(ms: number) {
  const seen = { started: 0, finished: 0, running: 0, mostAtOnce: 0 };
  const pass = async () => {
    seen.started++;
    seen.mostAtOnce = Math.max(seen.mostAtOnce, ++seen.running);
    await new Promise((resolve) => setTimeout(resolve, ms));
    seen.running--;
    return ++seen.finished;
  };
  return { seen, pass };
}

describe('periodic', () => {
  // Passes slower than the interval once queued one per tick: stop() after 1 s waited for ~90 more of them.
  it('skips a tick that finds a pass running, so stop() waits for that pass only', async () => {
    const { seen, pass } = slowPass(100);
    const schedule = periodic(10, pass, () => {});
    await vi.advanceTimersByTimeAsync(1000);
    expect(seen.started).toBeLessThanOrEqual(10);
    let stopped = false;
    const stopping = schedule.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(100);
    expect(stopped).toBe(true);
    await stopping;
    expect(seen.finished).toBe(seen.started);
    expect(seen.mostAtOnce).toBe(1);
  });

  it('runs a pass asked for while one runs after it, whole, and never two at once', async () => {
    const { seen, pass } = slowPass(100);
    const schedule = periodic(1000, pass, () => {});
    const first = schedule.runOnce();
    const second = schedule.runOnce();
    await vi.advanceTimersByTimeAsync(200);
    expect(await first).toBe(1);
    expect(await second).toBe(2);
    expect(seen.mostAtOnce).toBe(1);
    await schedule.stop();
  });

  it('hands a failed pass on the timer to onError and goes on', async () => {
    const failures: unknown[] = [];
    let calls = 0;
    const schedule = periodic(10, async () => {
      if (++calls === 1) throw new Error('first');
    }, (error) => failures.push(error));
    await vi.advanceTimersByTimeAsync(25);
    expect(failures).toHaveLength(1);
    expect(calls).toBe(2);
    await schedule.stop();
  });
});
