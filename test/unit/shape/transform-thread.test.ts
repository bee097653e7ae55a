import { afterEach, describe, expect, it } from 'vitest';
import type { Shaped } from '../../../src/shape/transform-result.ts';
import { TransformThread, type ThreadLimits } from '../../../src/shape/transform-thread.ts';

const LOOP = '($loop := function($n) { $loop($n + 1) }; $loop(0))';
const text = (shaped: Shaped) => (shaped.ok ? new TextDecoder().decode(shaped.bytes) : { error: shaped.error });

let threads: TransformThread[] = [];
function aThread(limits: Partial<ThreadLimits> = {}): TransformThread {
  const thread = new TransformThread({ timeMs: 250, depth: 500, resultBytes: 1024 * 1024, ...limits });
  threads.push(thread);
  return thread;
}
afterEach(async () => {
  await Promise.all(threads.map((thread) => thread.close()));
  threads = [];
});

describe('TransformThread', () => {
  it('sends what is asked in one turn as one batch, and answers each', async () => {
    const thread = aThread();
    const answers = await Promise.all([1, 2, 3].map((n) => thread.evaluate('{"n": n, "task": $taskId}', { n }, { taskId: `task_${n}` })));
    expect(answers.map(text)).toEqual(['{"n":1,"task":"task_1"}', '{"n":2,"task":"task_2"}', '{"n":3,"task":"task_3"}']);
  });

  it('fails only the runaway of a batch; its batch mates before and after it are answered by the thread that replaces it', async () => {
    const thread = aThread();
    const answers = await Promise.all([
      thread.evaluate('"before"', {}, {}),
      thread.evaluate(LOOP, {}, {}),
      thread.evaluate('"after"', {}, {}),
    ]);
    expect(answers.map(text)).toEqual(['"before"', { error: 'the transform ran longer than 250 ms and was stopped: an endless loop?' }, '"after"']);
    // And the next turn's evaluations go to the new thread as if nothing had happened.
    expect(text(await thread.evaluate('$sum([1, 2])', {}, {}))).toBe('3');
  });

  it('stops a runaway in the middle of one built-in call', async () => {
    const thread = aThread();
    const values = Array.from({ length: 100_000 }, (_, i) => i);
    const answers = await Promise.all([thread.evaluate('$count($distinct(values))', { values }, {}), thread.evaluate('"next"', {}, {})]);
    expect(answers.map(text)).toEqual([{ error: 'the transform ran longer than 250 ms and was stopped: an endless loop?' }, '"next"']);
  });

  it('never holds the event loop: a timer due now runs before the runaway is stopped', async () => {
    const thread = aThread();
    const order: string[] = [];
    const runaway = thread.evaluate(LOOP, {}, {}).then(() => order.push('runaway stopped'));
    await new Promise((resolve) => setTimeout(resolve, 0)).then(() => order.push('timer'));
    await runaway;
    expect(order).toEqual(['timer', 'runaway stopped']);
  });

  // The limit is each evaluation's own, from when the thread begins it: evaluations that are slow but within it
  // succeed however many share a batch, however long the batch takes altogether.
  it('lets every slow evaluation within the limit finish, when together they run past it', async () => {
    const timeMs = 1000;
    const thread = aThread({ timeMs });
    const slow = '$sum([1..n])';
    await thread.evaluate('"started"', {}, {}); // the thread starts with its first evaluation
    // A tenth of the limit or more alone, measured on this machine now: a margin for a machine that slows down.
    let [n, took] = [100_000, 0];
    for (; ; n *= 2) {
      const started = performance.now();
      await thread.evaluate(slow, { n }, {});
      took = performance.now() - started;
      if (took >= timeMs / 10 || n * 2 > 10_000_000) break; // JSONata's ranges stop at ten million
    }
    const count = Math.ceil((1.5 * timeMs) / took);
    const answers = await Promise.all(Array.from({ length: count }, () => thread.evaluate(slow, { n }, {})));
    expect(answers.map(text)).toEqual(Array(count).fill(String((n * (n + 1)) / 2)));
  });

  it('fails what it holds, and what is asked afterwards, once closed', async () => {
    const thread = aThread();
    const held = thread.evaluate(LOOP, {}, {});
    await new Promise((resolve) => setTimeout(resolve, 50));
    await thread.close();
    expect(text(await held)).toEqual({ error: 'the transform thread was closed' });
    expect(text(await thread.evaluate('1', {}, {}))).toEqual({ error: 'the transform thread was closed' });
  });
});
