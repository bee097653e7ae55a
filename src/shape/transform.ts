import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import vm from 'node:vm';
import type jsonata from 'jsonata';
import { explain, fail, shapedOf, type Shaped } from './transform-result.ts';

/**
 * An action's `transform`: a JSONata expression whose result, as JSON, is the body sent downstream; compiled when the
 * config is checked, evaluated once per task at ingest. JSONata runs in a V8 context of its own, stopped by node:vm's
 * `timeout`: with `microtaskMode: 'afterEvaluate'` its async evaluation ends, or is cut, inside one synchronous call.
 * JSONata's own `timeout` is checked only between its steps, and one built-in call can outrun it: in the main context
 * `$sort([1..100000])` filled a 4 GB heap and ended the process, `$distinct` of 100,000 values or a backtracking regex
 * held the event loop for minutes. The price (scripts/transform-cost.ts): 110–200 µs of the event loop per evaluation
 * against ~15 µs in the main context, mostly the watchdog thread node:vm starts per call. The context is no security
 * boundary and needs to be none: JSONata reads only own properties of its input and only the variables it is given —
 * there is no `$process` or `constructor` to reach.
 */
export const TRANSFORM_LIMITS = {
  timeMs: 250, // the longest one evaluation may hold the event loop; a shaping expression takes microseconds
  depth: 500, // JSONata's `stack`: ~165 levels of non-tail recursion; shaping needs under 15 evaluator levels
  resultBytes: 1024 * 1024, // the default `maxBodyBytes`: a bigger body is a runaway, not a request
} as const;

export const TRANSFORM_VARIABLES = ['headers', 'topic', 'eventId', 'deliveryId', 'taskId', 'source', 'action'] as const;
type Ids = 'eventId' | 'deliveryId' | 'taskId' | 'source' | 'action';
export type TransformBindings = { headers: Record<string, string>; topic: string | null } & Record<Ids, string>;
/** Opaque: the compiled expression lives in the sandbox, where only runTransform may evaluate it. */
export type Transform = { readonly source: string };
export type Compiled = { ok: true; transform: Transform } | { ok: false; message: string; position: number | null };
export type { Shaped };

const compiled = new WeakMap<Transform, jsonata.Expression>();
const settle = new vm.Script('job.expression.evaluate(job.input, job.bindings).then((v) => { job.value = v; }, (e) => { job.error = e; })');
// A global read in a context goes through its interceptor: handing JSONata its common globals as parameters took
// the CRM expression of scripts/transform-cost.ts from 67 to 20 µs.
const GLOBALS = 'Object, Array, Error, String, Math, Number, JSON, Date, RegExp, Symbol, Boolean, Promise, Map, parseInt, isNaN';
let sandbox: { jsonata: typeof jsonata; context: vm.Context } | undefined;

function theSandbox(): NonNullable<typeof sandbox> {
  if (sandbox) return sandbox;
  const file = createRequire(import.meta.url).resolve('jsonata');
  const shim = { exports: {} as unknown };
  // `global.Buffer` is where JSONata's $base64encode looks for Node's Buffer.
  const globals = { module: shim, exports: shim.exports, global: { Buffer } };
  const context = vm.createContext(globals, { microtaskMode: 'afterEvaluate', codeGeneration: { strings: false, wasm: false } });
  const wrapped = `(function (${GLOBALS}, undefined) {\n${readFileSync(file, 'utf8')}\n}).call(this, ${GLOBALS})`;
  new vm.Script(wrapped, { filename: file, lineOffset: -1 }).runInContext(context);
  return (sandbox = { jsonata: shim.exports as typeof jsonata, context });
}

function evaluate(expression: jsonata.Expression, input: unknown, bindings: object): { value: unknown } | { error: unknown } | 'timeout' {
  const { context } = theSandbox();
  const job: { value?: unknown; error?: unknown } = { expression, input, bindings } as object;
  context.job = job;
  try {
    settle.runInContext(context, { timeout: TRANSFORM_LIMITS.timeMs });
  } catch (error) {
    return (error as { code?: unknown }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT' ? 'timeout' : { error };
  } finally {
    context.job = undefined;
  }
  return 'value' in job ? { value: job.value } : { error: 'error' in job ? job.error : 'the evaluation did not finish' };
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
  compiled.set(transform, parsed);
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
  const builtIn = (name: string) => (evaluate(theSandbox().jsonata(`$${name}`), undefined, {}) as { value?: unknown }).value !== undefined;
  return [...used].find(([name]) => !bound.has(name) && !builtIn(name));
}

export async function runTransform(transform: Transform, input: unknown, bindings: TransformBindings): Promise<Shaped> {
  const expression = compiled.get(transform);
  if (!expression) return fail('the transform was not compiled by compileTransform');
  const { headers, topic, eventId, deliveryId, taskId, source, action } = bindings;
  const outcome = evaluate(expression, input, { headers, topic, eventId, deliveryId, taskId, source, action });
  if (outcome === 'timeout') return fail(`the transform ran longer than ${TRANSFORM_LIMITS.timeMs} ms and was stopped: an endless loop?`);
  return shapedOf(outcome, TRANSFORM_LIMITS.resultBytes);
}
