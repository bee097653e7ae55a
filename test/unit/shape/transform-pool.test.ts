import { afterEach, describe, expect, it } from 'vitest';
import type { Shaped } from '../../../src/shape/transform-result.ts';
import { TransformPool, type PoolLimits } from '../../../src/shape/transform-pool.ts';

const LOOP = '($loop := function($n) { $loop($n + 1) }; $loop(0))';
/** Each element a new object: a heap that grows by hundreds of MiB, never one allocation larger than the limit. */
const HUNGRY = '$count([1..10000000])';
const OVERRAN = { error: 'the transform ran longer than 250 ms and was stopped: an endless loop?' };
const text = (shaped: Shaped) => (shaped.ok ? new TextDecoder().decode(shaped.bytes) : { error: shaped.error });

let pools: TransformPool[] = [];
function aPool(limits: Partial<PoolLimits> = {}): TransformPool {
  const pool = new TransformPool({ timeMs: 250, depth: 500, resultBytes: 1024 * 1024, memoryMb: 64, evaluators: 2, ...limits });
  pools.push(pool);
  return pool;
}
afterEach(async () => {
  await Promise.all(pools.map((pool) => pool.close()));
  pools = [];
});

describe('TransformPool', () => {
  it('answers each of what is asked in one turn', async () => {
    const pool = aPool();
    const answers = await Promise.all([1, 2, 3].map((n) => pool.evaluate('shop', '{"n": n, "task": $taskId}', { n }, { taskId: `task_${n}` })));
    expect(answers.map(text)).toEqual(['{"n":1,"task":"task_1"}', '{"n":2,"task":"task_2"}', '{"n":3,"task":"task_3"}']);
  });

  it('fails only the runaway of a batch; its batch mates before and after it are answered by the process that replaces it', async () => {
    const pool = aPool();
    const answers = await Promise.all([pool.evaluate('shop', '"before"', {}, {}), pool.evaluate('shop', LOOP, {}, {}), pool.evaluate('shop', '"after"', {}, {})]);
    expect(answers.map(text)).toEqual(['"before"', OVERRAN, '"after"']);
    expect(text(await pool.evaluate('shop', '$sum([1, 2])', {}, {}))).toBe('3');
  });

  it('stops a runaway in the middle of one built-in call', async () => {
    const pool = aPool();
    const values = Array.from({ length: 100_000 }, (_, i) => i);
    const answers = await Promise.all([pool.evaluate('shop', '$count($distinct(values))', { values }, {}), pool.evaluate('shop', '"next"', {}, {})]);
    expect(answers.map(text)).toEqual([OVERRAN, '"next"']);
  });

  it('fails a transform past its memory limit cleanly, and evaluates the next in a new process', async () => {
    // Time enough to reach the memory limit first on a busy machine.
    const pool = aPool({ timeMs: 20_000 });
    const before = process.memoryUsage.rss();
    const answers = await Promise.all([pool.evaluate('shop', HUNGRY, {}, {}), pool.evaluate('shop', '"next"', {}, {})]);
    expect(answers.map(text)).toEqual([{ error: 'the transform used more than its 64 MiB of memory and was stopped' }, '"next"']);
    // Measured in this process: the heap that grew was the child's.
    expect(process.memoryUsage.rss() - before).toBeLessThan(100 * 2 ** 20);
  }, 30_000);

  // A source's jobs wait only behind its own: with one evaluator held by the runaways, the other serves the rest.
  it("keeps one source's endless loops from delaying another source", async () => {
    const pool = aPool();
    await pool.warm(2);
    const loops = Array.from({ length: 6 }, () => pool.evaluate('slow', LOOP, {}, {}));
    const took: number[] = [];
    for (let i = 0; i < 10; i++) {
      const started = performance.now();
      expect(text(await pool.evaluate('fast', '"quick"', {}, {}))).toBe('"quick"');
      took.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect((await Promise.all(loops)).map(text)).toEqual(Array(6).fill(OVERRAN));
    // Six loops take 1.5 s of one evaluator and a replacement each; queued behind them one would wait seconds.
    expect(Math.max(...took)).toBeLessThan(1000);
  }, 60_000);

  it('answers late, unevaluated, what cannot start by its deadline: at once once the queue is known to be too long', async () => {
    const pool = aPool({ evaluators: 1 });
    const first = pool.evaluate('slow', LOOP, {}, {});
    const behind = await pool.evaluate('slow', '"never"', {}, {}, performance.now() + 100);
    expect(behind).toMatchObject({ ok: false, late: true });
    expect(text(await first)).toEqual(OVERRAN);
    expect(text(await pool.evaluate('slow', '"next"', {}, {}))).toBe('"next"'); // once the replacement has started
    // The source's cost is now known: a deadline nearer than its queue is refused without waiting.
    const held = pool.evaluate('slow', LOOP, {}, {});
    const asked = performance.now();
    expect(await pool.evaluate('slow', '"never"', {}, {}, performance.now() + 150)).toMatchObject({ late: true });
    expect(performance.now() - asked).toBeLessThan(100);
    await held;
  }, 30_000);

  it('fails what it holds, and what is asked afterwards, once closed', async () => {
    const pool = aPool();
    const held = pool.evaluate('shop', LOOP, {}, {});
    await new Promise((resolve) => setTimeout(resolve, 50));
    await pool.close();
    expect(text(await held)).toEqual({ error: 'the transform processes were closed' });
    expect(text(await pool.evaluate('shop', '1', {}, {}))).toEqual({ error: 'the transform processes were closed' });
  });
});
