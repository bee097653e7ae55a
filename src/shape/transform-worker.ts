/**
 * The transform's worker thread: evaluates the jobs it is sent, one after another, and answers each batch with the
 * bodies as bytes. Before each job it writes the job's ID and the time it began where the gateway's thread reads
 * them (transform-thread.ts), which terminates this thread when one job runs past the limit. JSONata reads only own
 * properties of its input and the variables it is given: there is no `$process` or `constructor` to reach here.
 */
import { workerData } from 'node:worker_threads';
import jsonata from 'jsonata';
import { shapedOf } from './transform-result.ts';
import type { Answer, Job, WorkerData } from './transform-thread.ts';

const { port, progress, depth, resultBytes } = workerData as WorkerData;
const [ID, STARTED] = [0, 1];
const inProgress = new BigInt64Array(progress);
const expressions = new Map<string, jsonata.Expression>();

async function evaluate({ source, input, bindings }: Job): Promise<{ value: unknown } | { error: unknown }> {
  try {
    let expression = expressions.get(source);
    // The gateway compiled and checked every source at start; parsing it again here is once per action.
    if (!expression) expressions.set(source, (expression = jsonata(source, { stack: depth })));
    return { value: await expression.evaluate(input, bindings) };
  } catch (error) {
    return { error };
  }
}

async function answer(jobs: Job[]): Promise<void> {
  const answers: Answer[] = [];
  for (const job of jobs) {
    // The time first: read in the other order, an ID with the next job's start only makes the limit later, never sooner.
    Atomics.store(inProgress, STARTED, process.hrtime.bigint());
    Atomics.store(inProgress, ID, BigInt(job.id));
    answers.push({ id: job.id, shaped: shapedOf(await evaluate(job), resultBytes) });
  }
  Atomics.store(inProgress, ID, -1n);
  port.postMessage(answers, answers.flatMap(({ shaped }) => (shaped.ok ? [shaped.bytes.buffer as ArrayBuffer] : [])));
}

// Evaluation is asynchronous: batches queue, so that one job at a time is in progress.
let queue = Promise.resolve();
port.on('message', (jobs: Job[]) => {
  queue = queue.then(() => answer(jobs));
});
