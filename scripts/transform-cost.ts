/**
 * `npx tsx scripts/transform-cost.ts`: what an action's `transform` costs per task — a CRM-shaping expression on a
 * ~3 KB Shopify-like order, compiled once and evaluated many times, one at a time and 32 at once (ingest answers many
 * deliveries at once). Beside runTransform (src/shape/transform-pool.ts: child processes, a source's jobs of a turn of
 * the event loop in one message; their CPU is the children's, not counted below), the designs it replaced or was
 * weighed against, rebuilt here: JSONata in a node:vm context with
 * `timeout`, one call per evaluation (the watchdog thread node:vm starts per call); the same context with the
 * evaluations of a turn in one call under one timeout; the thread with a message per evaluation; and JSONata in the
 * main thread with no limit at all. CPU is the process's, split into user and system time, and the main thread's
 * own (Linux: /proc/thread-self, 10 ms ticks), which is what the event loop pays.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import vm from 'node:vm';
import { MessageChannel, Worker } from 'node:worker_threads';
import jsonata from 'jsonata';
import { compileTransform, runTransform } from '../src/shape/transform.ts';

const expression = '{"email": customer.email, "name": customer.first_name & " " & customer.last_name, "external_id": $taskId, "total": $number(total_price)}';
const lineItem = (i: number) => ({
  id: 866550311766439000 + i, variant_id: 808950810 + i, title: `IPod Nano - 8GB (${i})`, quantity: 1, sku: `IPOD2008PINK-${i}`,
  vendor: 'Apple', product_id: 632910392, requires_shipping: true, taxable: true, gift_card: false, price: '199.00',
  total_discount: '0.00', fulfillment_status: null, properties: [], tax_lines: [{ price: '11.94', rate: 0.06, title: 'State Tax' }],
});
const order = {
  id: 820982911946154500, admin_graphql_api_id: 'gid://shopify/Order/820982911946154508', email: 'jon@example.com',
  created_at: '2026-04-01T12:00:00-04:00', currency: 'USD', financial_status: 'paid', total_price: '403.00', subtotal_price: '393.00',
  total_tax: '11.94', customer: { id: 115310627314723950, email: 'john@example.com', first_name: 'John', last_name: 'Smith', state: 'disabled', verified_email: true, tags: '' },
  billing_address: { first_name: 'Steve', last_name: 'Shipper', address1: '123 Shipping Street', city: 'Shippington', province: 'Kentucky', country: 'United States', zip: '40003', phone: '555-555-SHIP' },
  shipping_address: { first_name: 'Steve', last_name: 'Shipper', address1: '123 Shipping Street', city: 'Shippington', province: 'Kentucky', country: 'United States', zip: '40003', phone: '555-555-SHIP' },
  line_items: [1, 2, 3, 4, 5, 6].map(lineItem),
};
const input = JSON.parse(JSON.stringify(order)) as unknown;
const bindings = { headers: { 'x-shopify-topic': 'orders/create' }, topic: 'orders/create', eventId: 'e1', deliveryId: 'd1', taskId: 'task_1', source: 'shop', action: 'crm' };
const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

const compiledOnce = compileTransform(expression);
if (!compiledOnce.ok) throw new Error(compiledOnce.message);
const { transform } = compiledOnce;
const bare = jsonata(expression, { stack: 500 });

// The former sandbox: JSONata loaded into a context of its own, its common globals handed in as parameters (a
// global read in a context goes through its interceptor).
const GLOBALS = 'Object, Array, Error, String, Math, Number, JSON, Date, RegExp, Symbol, Boolean, Promise, Map, parseInt, isNaN';
const shim = { exports: {} as unknown };
const context = vm.createContext({ module: shim, exports: shim.exports, global: { Buffer } }, { microtaskMode: 'afterEvaluate', codeGeneration: { strings: false, wasm: false } });
const jsonataFile = createRequire(import.meta.url).resolve('jsonata');
new vm.Script(`(function (${GLOBALS}, undefined) {\n${readFileSync(jsonataFile, 'utf8')}\n}).call(this, ${GLOBALS})`).runInContext(context);
const inContext = (shim.exports as typeof jsonata)(expression, { stack: 500 });
const settleOne = new vm.Script('job.expression.evaluate(job.input, job.bindings).then((v) => { job.value = v; })');
function inVm(): Promise<unknown> {
  const job: { value?: unknown } = { expression: inContext, input, bindings } as object;
  context.job = job;
  settleOne.runInContext(context, { timeout: 250 });
  return Promise.resolve(encode(job.value));
}

// A turn's evaluations in one call under one timeout.
const settleAll = new vm.Script('(async () => { for (const job of jobs) job.value = await job.expression.evaluate(job.input, job.bindings); })()');
let turn: { job: { value?: unknown }; resolve: (bytes: unknown) => void }[] = [];
function batchedInVm(): Promise<unknown> {
  return new Promise((resolve) => {
    if (turn.length === 0) {
      setImmediate(() => {
        const batch = turn.splice(0);
        context.jobs = batch.map(({ job }) => job);
        settleAll.runInContext(context, { timeout: 250 });
        for (const { job, resolve: done } of batch) done(encode(job.value));
      });
    }
    turn.push({ job: { expression: inContext, input, bindings } as object, resolve });
  });
}

// A worker thread answering every evaluation with a message of its own.
const { port1, port2 } = new MessageChannel();
const worker = new Worker(
  `const { workerData: { port, file, expression } } = require('node:worker_threads');
   const compiled = require(file)(expression, { stack: 500 });
   port.on('message', async ({ id, input, bindings }) => {
     const bytes = new TextEncoder().encode(JSON.stringify(await compiled.evaluate(input, bindings)));
     port.postMessage({ id, bytes }, [bytes.buffer]);
   });`,
  { eval: true, workerData: { port: port2, file: jsonataFile, expression }, transferList: [port2] },
);
const answers = new Map<number, (bytes: unknown) => void>();
port1.on('message', ({ id, bytes }: { id: number; bytes: Uint8Array }) => {
  answers.get(id)!(bytes);
  answers.delete(id);
});
let nextId = 0;
function messageEach(): Promise<unknown> {
  const id = nextId++;
  port1.postMessage({ id, input, bindings });
  return new Promise((resolve) => answers.set(id, resolve));
}

const mainThreadUs = (): number | null => {
  try {
    const fields = readFileSync('/proc/thread-self/stat', 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000; // utime, stime in ticks of 10 ms
  } catch {
    return null;
  }
};

async function perEvaluation(name: string, evaluateOnce: () => Promise<unknown>, atOnce: number, n = 20_000): Promise<void> {
  const round = async (count: number) => {
    for (let i = 0; i < count; i += atOnce) await Promise.all(Array.from({ length: atOnce }, evaluateOnce));
  };
  await round(2_000);
  const cpu = process.cpuUsage();
  const main = mainThreadUs();
  const started = performance.now();
  await round(n);
  const { user, system } = process.cpuUsage(cpu);
  const mainAfter = mainThreadUs();
  const per = (total: number) => (total / n).toFixed(1);
  const onMain = main === null || mainAfter === null ? '' : `, ${per(mainAfter - main)} on the main thread`;
  console.log(`${name}, ${atOnce} at once: ${per((performance.now() - started) * 1000)} µs per evaluation (${per(user + system)} µs of CPU: ${per(user)} user, ${per(system)} system${onMain})`);
}

console.log(`order: ${JSON.stringify(order).length} bytes; result: ${JSON.stringify(await bare.evaluate(input, bindings))}`);
for (let round = 1; round <= 2; round++) {
  for (const atOnce of [1, 32]) {
    await perEvaluation('runTransform (a worker thread, a message per turn)', () => runTransform(transform, input, bindings), atOnce);
    await perEvaluation('node:vm with timeout, a call per evaluation', inVm, atOnce);
    await perEvaluation("node:vm with timeout, a call per turn's evaluations", batchedInVm, atOnce);
    await perEvaluation('a worker thread, a message per evaluation', messageEach, atOnce);
    await perEvaluation('JSONata in the main thread, no limit', async () => encode(await bare.evaluate(input, bindings)), atOnce);
  }
}
port1.close();
await worker.terminate();
