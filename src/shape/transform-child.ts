/**
 * A transform process (evaluator.ts starts it): evaluates the jobs it is sent, one after another, and answers each
 * as soon as it is done — the gateway times the job in progress from the answer before it. A job that cannot begin
 * before its `startBy` is answered late, unevaluated: its delivery is answered 503 in time rather than 2xx too late.
 * JSONata reads only own properties of its input and the variables it is given: there is no `$process` or
 * `constructor` to reach here. It exits when the gateway does: its IPC channel closes.
 */
import jsonata from 'jsonata';
import { shapedOf } from './transform-result.ts';
import type { ChildAnswer, ChildJob } from './evaluator.ts';

const [depth, resultBytes] = [Number(process.env.ONCEHOOK_TRANSFORM_DEPTH), Number(process.env.ONCEHOOK_TRANSFORM_RESULT_BYTES)];
const expressions = new Map<string, jsonata.Expression>();
/** A pipe's buffer: a body larger than this is not written at once. */
const LARGE_BYTES = 64 * 1024;

async function evaluate({ expression: text, input, bindings }: ChildJob): Promise<{ value: unknown } | { error: unknown }> {
  try {
    let expression = expressions.get(text);
    // The gateway compiled and checked every expression at start; parsing it again here is once per action.
    if (!expression) expressions.set(text, (expression = jsonata(text, { stack: depth })));
    return { value: await expression.evaluate(input, bindings) };
  } catch (error) {
    return { error };
  }
}

const send = (answer: ChildAnswer | { ready: true } | { began: true } | { evaluated: number }) => new Promise<void>((resolve) => process.send!(answer, undefined, {}, () => resolve()));

async function answer(jobs: ChildJob[]): Promise<void> {
  // The batch has arrived: its first job's limit runs from now, not from a large input's transfer.
  await send({ began: true });
  for (const job of jobs) {
    if (Date.now() > job.startBy) {
      await send({ id: job.id, late: true });
      continue;
    }
    const shaped = shapedOf(await evaluate(job), resultBytes);
    // A large body takes a while to reach the gateway: its evaluation is over, and the gateway stops its clock.
    if (shaped.ok && shaped.bytes.byteLength > LARGE_BYTES) await send({ evaluated: job.id });
    await send({ id: job.id, shaped });
  }
}

// Evaluation is asynchronous: batches queue, so that one job at a time is in progress.
let queue = Promise.resolve();
process.on('message', (jobs: ChildJob[]) => {
  queue = queue.then(() => answer(jobs));
});
process.on('disconnect', () => process.exit(0));
// JSONata's first evaluation compiles its own code: done before the gateway times one, or it counts against the limit.
void evaluate({ id: -1, expression: '$string({"warm": [1, 2].($ * 2)})', input: {}, bindings: {}, startBy: Infinity }).then(() => send({ ready: true }));
