import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import vm from 'node:vm';
import type jsonata from 'jsonata';
import { explain, fail, type Shaped } from './transform-result.ts';
import { TransformPool } from './transform-pool.ts';

/**
 * An action's `transform`: a JSONata expression whose result, as JSON, is the body sent downstream; compiled when the
 * config is checked, evaluated once per task at ingest — in a child process (transform-pool.ts, evaluator.ts),
 * which is killed when an evaluation runs longer than the time limit and ends itself past the memory limit. JSONata's own `timeout` is checked only between its
 * steps, and one built-in call can outrun it: in the main thread `$sort([1..100000])` filled a 4 GB heap and ended
 * the process, `$distinct` of 100,000 values or a backtracking regex held the event loop for minutes. The event loop
 * never waits for JSONata.
 */
export const TRANSFORM_LIMITS = {
  timeMs: 250, // the longest one evaluation may run; a shaping expression takes microseconds
  depth: 500, // JSONata's `stack`: ~165 levels of non-tail recursion; shaping needs under 15 evaluator levels
  resultBytes: 1024 * 1024, // the default `maxBodyBytes`: a bigger body is a runaway, not a request
  // The child's heap: a 1 MiB delivery parsed takes ~10 MiB, and shaping it a few more. An evaluation that needs more
  // is a runaway; one child at the limit costs ~170 MiB of RSS (docs/performance-transforms.md#transforms-isolated).
  memoryMb: 128,
  evaluators: 2, // one source's slow transforms hold at most one; the other serves every other source
} as const;

export const TRANSFORM_VARIABLES = ['headers', 'topic', 'eventId', 'deliveryId', 'taskId', 'source', 'action'] as const;
type Ids = 'eventId' | 'deliveryId' | 'taskId' | 'source' | 'action';
export type TransformBindings = { headers: Record<string, string>; topic: string | null } & Record<Ids, string>;
/** Opaque: only one that compileTransform checked may be evaluated. */
export type Transform = { readonly source: string };
export type Compiled = { ok: true; transform: Transform } | { ok: false; message: string; position: number | null };
export type { Shaped };

const compiled = new WeakSet<Transform>();
const pool = new TransformPool(TRANSFORM_LIMITS);

/**
 * Starts transform processes ahead of the first deliveries that need them, one per source with transforms up to the
 * pool's size: a gateway does while it opens its store. Settles when they are ready, or have failed to start.
 */
export const warmTransforms = (sources: number): Promise<void> => pool.warm(sources);
// The config check parses each expression and asks JSONata which `$names` are its functions, by evaluating them:
// JSONata's evaluation is asynchronous, and a context of its own with `microtaskMode: 'afterEvaluate'` settles it
// inside one synchronous call, as zod's check needs. `$name` cannot run away: no time limit is needed here.
const settle = new vm.Script('job.expression.evaluate(job.input, job.bindings).then((v) => { job.value = v; })');
let sandbox: { jsonata: typeof jsonata; context: vm.Context } | undefined;

function theSandbox(): NonNullable<typeof sandbox> {
  if (sandbox) return sandbox;
  const file = createRequire(import.meta.url).resolve('jsonata');
  const shim = { exports: {} as unknown };
  const context = vm.createContext({ module: shim, exports: shim.exports }, { microtaskMode: 'afterEvaluate', codeGeneration: { strings: false, wasm: false } });
  new vm.Script(readFileSync(file, 'utf8'), { filename: file }).runInContext(context);
  return (sandbox = { jsonata: shim.exports as typeof jsonata, context });
}

export function compileTransform(expression: string): Compiled {
  let parsed: jsonata.Expression;
  try {
    parsed = theSandbox().jsonata(expression, { stack: TRANSFORM_LIMITS.depth });
  } catch (error) {
    const { text, position } = explain(error);
    return { ok: false, message: `does not parse${text}`, position };
  }
  const unbound = unboundVariable(parsed.ast());
  if (unbound) {
    const [name, position] = unbound;
    const ours = TRANSFORM_VARIABLES.map((variable) => `$${variable}`).join(', ');
    return { ok: false, message: `uses $${name} at character ${position}, which nothing binds (a transform has ${ours})`, position };
  }
  const transform: Transform = { source: expression };
  compiled.add(transform);
  return { ok: true, transform };
}

// To JSONata a misspelt `$taskID` is only a missing value: the body would go without its external ID. A variable is
// refused unless it is ours, bound anywhere in the expression (`:=`, a lambda's parameters, `@$x`, `#$i` — anywhere,
// so a correct one is never refused) or one of JSONata's functions, which JSONata itself answers.
function unboundVariable(ast: unknown): [name: string, position: number] | undefined {
  const used = new Map<string, number>();
  const bound = new Set<string>(['', '$', ...TRANSFORM_VARIABLES]);
  const seen = new Set<object>();
  const visit = (node: unknown): void => {
    if (typeof node !== 'object' || node === null || seen.has(node)) return;
    seen.add(node);
    const { type, value, position, lhs, focus, index } = node as Record<string, unknown>;
    if (type === 'variable' && typeof value === 'string' && !used.has(value)) used.set(value, Number(position));
    if (type === 'bind') bound.add(String((lhs as { value?: unknown }).value));
    if (type === 'lambda') for (const parameter of (node as { arguments: { value: string }[] }).arguments) bound.add(parameter.value);
    for (const name of [focus, index]) if (typeof name === 'string') bound.add(name);
    for (const child of Object.values(node)) visit(child);
  };
  visit(ast);
  const builtIn = (name: string) => {
    const { context, jsonata: parse } = theSandbox();
    const job: { value?: unknown } = { expression: parse(`$${name}`), input: undefined, bindings: {} } as object;
    context.job = job;
    settle.runInContext(context);
    context.job = undefined;
    return job.value !== undefined;
  };
  return [...used].find(([name]) => !bound.has(name) && !builtIn(name));
}

/**
 * Evaluates in the source's turn (transform-pool.ts); `startBy` is the latest `performance.now()` it may begin at, and
 * one that cannot is answered `late`, unevaluated.
 */
export async function runTransform(transform: Transform, input: unknown, bindings: TransformBindings, startBy?: number): Promise<Shaped> {
  if (!compiled.has(transform)) return fail('the transform was not compiled by compileTransform');
  const { headers, topic, eventId, deliveryId, taskId, source, action } = bindings;
  return pool.evaluate(source, transform.source, input, { headers, topic, eventId, deliveryId, taskId, source, action }, startBy);
}
