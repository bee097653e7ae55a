/**
 * `npx tsx scripts/transform-cost.ts`: what an action's `transform` costs per task — a CRM-shaping expression on a
 * ~3 KB Shopify-like order, compiled once and evaluated many times, beside the same expression evaluated by JSONata
 * in the main context without the sandbox's time limit (what src/shape/transform.ts pays for that limit), and in a
 * sandbox built the same way but called without node:vm's `timeout`, which starts a watchdog thread for every call:
 * what that thread costs, apart from the context. CPU is split into user and system time; the thread is mostly system.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import vm from 'node:vm';
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

const compiledOnce = compileTransform(expression);
if (!compiledOnce.ok) throw new Error(compiledOnce.message);
const { transform } = compiledOnce;
const bare = jsonata(expression, { stack: 500 });

// src/shape/transform.ts's sandbox, rebuilt here because it is private there: JSONata loaded into its own context.
const GLOBALS = 'Object, Array, Error, String, Math, Number, JSON, Date, RegExp, Symbol, Boolean, Promise, Map, parseInt, isNaN';
const shim = { exports: {} as unknown };
const context = vm.createContext({ module: shim, exports: shim.exports, global: { Buffer } }, { microtaskMode: 'afterEvaluate', codeGeneration: { strings: false, wasm: false } });
const source = readFileSync(createRequire(import.meta.url).resolve('jsonata'), 'utf8');
new vm.Script(`(function (${GLOBALS}, undefined) {\n${source}\n}).call(this, ${GLOBALS})`).runInContext(context);
const inContext = (shim.exports as typeof jsonata)(expression, { stack: 500 });
const settle = new vm.Script('job.expression.evaluate(job.input, job.bindings).then((v) => { job.value = v; })');
function withoutTimeout(): unknown {
  const job: { value?: unknown } = { expression: inContext, input, bindings } as object;
  context.job = job;
  settle.runInContext(context);
  return new TextEncoder().encode(JSON.stringify(job.value));
}

async function perEvaluation(name: string, evaluateOnce: () => Promise<unknown>, n = 20_000): Promise<void> {
  for (let i = 0; i < 2_000; i++) await evaluateOnce();
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < n; i++) await evaluateOnce();
  const { user, system } = process.cpuUsage(cpu);
  const per = (total: number) => (total / n).toFixed(1);
  console.log(`${name}: ${per((performance.now() - started) * 1000)} µs per evaluation (${per(user + system)} µs of CPU: ${per(user)} user, ${per(system)} system)`);
}

console.log(`order: ${JSON.stringify(order).length} bytes; result: ${JSON.stringify(await bare.evaluate(input, bindings))}`);
for (let round = 1; round <= 3; round++) {
  await perEvaluation('runTransform (sandbox, time limit, serialised)', () => runTransform(transform, input, bindings));
  await perEvaluation('the same sandbox without the time limit (no watchdog thread)', async () => withoutTimeout());
  await perEvaluation('JSONata in the main context + JSON.stringify', async () => new TextEncoder().encode(JSON.stringify(await bare.evaluate(input, bindings))));
}
