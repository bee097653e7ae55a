import { describe, expect, it } from 'vitest';
import { compileTransform, runTransform, TRANSFORM_LIMITS, type Transform, type TransformBindings } from '../../../src/shape/transform.ts';

const bindings: TransformBindings = {
  headers: { 'x-shopify-topic': 'orders/create', 'x-shopify-shop-domain': 'shop.example' },
  topic: 'orders/create',
  eventId: 'evt_1',
  deliveryId: 'dlv_1',
  taskId: 'task_1',
  source: 'shop',
  action: 'crm',
};
const order = {
  total_price: '403.00',
  customer: { email: 'john@example.com', first_name: 'John', last_name: 'Smith' },
  line_items: [{ sku: 'IPOD-PINK', quantity: 1 }, { sku: 'IPOD-BLUE', quantity: 2 }],
};
const crm = '{"email": customer.email, "name": customer.first_name & " " & customer.last_name, "external_id": $taskId, "total": $number(total_price)}';
const overLimit = TRANSFORM_LIMITS.resultBytes;

function compiled(expression: string): Transform {
  const outcome = compileTransform(expression);
  if (!outcome.ok) throw new Error(`${expression} ${outcome.message}`);
  return outcome.transform;
}

async function run(expression: string, input: unknown, overrides: Partial<TransformBindings> = {}): Promise<{ body?: string; error?: string }> {
  const outcome = await runTransform(compiled(expression), input, { ...bindings, ...overrides });
  return outcome.ok ? { body: new TextDecoder().decode(outcome.bytes) } : { error: outcome.error };
}

type Row = { why: string; expression: string; input?: unknown; bindings?: Partial<TransformBindings> } & ({ body: string | RegExp } | { error: string });

const rows: Row[] = [
  { why: 'shapes an order into the body a CRM takes', expression: crm, input: order, body: '{"email":"john@example.com","name":"John Smith","external_id":"task_1","total":403}' },
  {
    why: 'binds every variable: the headers by lower-case name, the topic and the IDs of the delivery, event and task',
    expression: '{"shop": $headers."x-shopify-shop-domain", "topic": $topic, "event": $eventId, "delivery": $deliveryId, "task": $taskId, "source": $source, "action": $action}',
    input: order,
    body: '{"shop":"shop.example","topic":"orders/create","event":"evt_1","delivery":"dlv_1","task":"task_1","source":"shop","action":"crm"}',
  },
  { why: 'binds $topic as null for a sender without topics', expression: '{"topic": $topic}', input: order, bindings: { topic: null }, body: '{"topic":null}' },
  { why: 'a path through an array gives a JSON array', expression: 'line_items.sku', input: order, body: '["IPOD-PINK","IPOD-BLUE"]' },
  // JSONata's sequences: a path that matches one value gives that value, which surprises who expects a list.
  { why: 'a path that matches one element gives the element itself', expression: 'line_items[quantity > 1].sku', input: order, body: '"IPOD-BLUE"' },
  { why: '[] keeps a one-element result an array', expression: 'line_items[quantity > 1].sku[]', input: order, body: '["IPOD-BLUE"]' },
  { why: 'an array built from sequences is plain JSON', expression: '{"skus": [line_items.sku], "count": $count(line_items)}', input: order, body: '{"skus":["IPOD-PINK","IPOD-BLUE"],"count":2}' },
  { why: 'an array body stays an array', expression: '$', input: [1, 2], body: '[1,2]' },
  { why: '$now() is an ISO string and $millis() a number', expression: '{"at": $now(), "ms": $millis()}', input: order, body: /^\{"at":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z","ms":\d{13}\}$/ },
  { why: 'built-ins that need Node\'s Buffer work in the sandbox', expression: '$base64encode(customer.first_name) & " " & $base64decode("U21pdGg=")', input: order, body: '"Sm9obg== Smith"' },
  { why: 'a field that is missing is left out of an object', expression: '{"email": customer.email, "phone": customer.phone}', input: order, body: '{"email":"john@example.com"}' },
  { why: 'a body of only missing fields is no result', expression: 'customer.phone', input: order, error: 'the transform gave no result: the expression matched nothing' },
  { why: 'a value that is no number fails where it is cast', expression: '$number(total_price)', input: { total_price: 'x' }, error: 'the transform failed at character 8: Unable to cast value to a number: "x" (JSONata D3030)' },
  { why: 'a type error names the operator', expression: 'total_price + 1', input: order, error: 'the transform failed at character 13: The left side of the "+" operator must evaluate to a number (JSONata T2001)' },
  { why: "the expression's own $error is its message", expression: 'customer.phone ? customer.phone : $error("no phone for " & customer.email)', input: order, error: 'the transform failed at character 41: no phone for john@example.com (JSONata D3137)' },
  { why: 'a function is not a body', expression: 'function($x) { $x }', input: order, error: "the transform's result is not JSON: a function" },
  { why: 'a built-in function in a field is not a body, and the field is named', expression: '{"email": $uppercase}', input: order, error: `the transform's result is not JSON: a function at "email"` },
  { why: 'a regular expression is a function too', expression: '/ipod/i', input: order, error: "the transform's result is not JSON: a function" },
  { why: 'Infinity has no JSON; JSON.stringify would have sent null', expression: '{"ratio": 1 / 0}', input: order, error: `the transform's result is not JSON: Infinity at "ratio"` },
  { why: 'an endless tail recursion is stopped at the time limit', expression: '($loop := function($n) { $loop($n + 1) }; $loop(0))', input: order, error: 'the transform ran longer than 250 ms and was stopped' },
  { why: 'a deep recursion is stopped at the depth limit', expression: '($deep := function($n) { $n + $deep($n + 1) }; $deep(0))', input: order, error: 'Stack overflow. Check for non-terminating recursive function' },
  // Built-ins run without JSONata's guardrails: these held the event loop for minutes outside the sandbox.
  { why: 'a built-in that is quadratic in the sender\'s array is stopped at the time limit', expression: '$count($distinct(values))', input: { values: Array.from({ length: 100_000 }, (_, i) => i) }, error: 'the transform ran longer than 250 ms' },
  { why: 'a backtracking regular expression on the sender\'s text is stopped at the time limit', expression: '$match(note, /(a+)+$/)', input: { note: `${'a'.repeat(40)}!` }, error: 'the transform ran longer than 250 ms' },
  { why: 'a result of exactly the limit is sent', expression: 'note', input: { note: 'x'.repeat(overLimit - 2) }, body: /^"x+"$/ },
  // 10,000 items of 103 bytes: 18 KB under the limit, which their indexes (38,890 digits), counted, would pass.
  // Few items, as the time limit counts too: 100,000 of 10 bytes took most of the 250 ms on a busy machine and were
  // stopped now and then.
  { why: 'an array near the limit is sent: its indexes are no bytes of it', expression: 'values', input: { values: Array<string>(10_000).fill('x'.repeat(100)) }, body: /^\["x{100}"(,"x{100}"){9999}\]$/ },
  { why: 'a result one byte over the limit is refused', expression: 'note', input: { note: 'x'.repeat(overLimit - 1) }, error: `the transform's result is larger than ${overLimit} bytes` },
  { why: 'a result many times the limit is refused', expression: '[1..100].($$.note)', input: { note: 'x'.repeat(100_000) }, error: `the transform's result is larger than ${overLimit} bytes` },
  {
    why: 'nothing outside the bindings is reachable, not even through $eval or the prototype',
    expression: '{"process": $eval("$process"), "require": $eval("$require"), "job": $eval("$job"), "ctor": constructor, "proto": $lookup($, "__proto__"), "task": $eval("$taskId")}',
    input: {},
    body: '{"task":"task_1"}',
  },
];

describe('runTransform', () => {
  it.each(rows)('$why', async (row) => {
    const outcome = await run(row.expression, row.input, row.bindings);
    if ('error' in row) {
      expect(outcome.body).toBeUndefined();
      expect(outcome.error).toContain(row.error);
    } else if (typeof row.body === 'string') {
      expect(outcome).toEqual({ body: row.body });
    } else {
      expect(outcome.error).toBeUndefined();
      expect(outcome.body).toMatch(row.body);
    }
  });

  it('holds the event loop no longer than the time limit, with a generous margin', async () => {
    const transform = compiled('($loop := function($n) { $loop($n + 1) }; $loop(0))');
    const scheduled = performance.now();
    const late = new Promise<number>((resolve) => setTimeout(() => resolve(performance.now() - scheduled), 0));
    const outcome = await runTransform(transform, {}, bindings);
    expect(outcome).toMatchObject({ ok: false, error: expect.stringContaining('ran longer than 250 ms') });
    expect(await late).toBeLessThan(TRANSFORM_LIMITS.timeMs + 1000);
  });

  it('leaves nothing behind for the next evaluation: neither a variable nor a stopped runaway', async () => {
    const transform = compiled('$exists($seen) ? "leaked" : ($seen := true; "clean")');
    for (let i = 0; i < 2; i++) expect(await runTransform(transform, {}, bindings)).toEqual({ ok: true, bytes: new TextEncoder().encode('"clean"') });
    await run('($loop := function($n) { $loop($n + 1) }; $loop(0))', {});
    expect(await run(crm, order)).toEqual({ body: '{"email":"john@example.com","name":"John Smith","external_id":"task_1","total":403}' });
  });

  // Ingest asks for many deliveries' transforms at once, and they are evaluated together (transform-thread.ts).
  it('fails only the runaway among the transforms asked for at the same time', async () => {
    const outcomes = await Promise.all([run(crm, order), run('($loop := function($n) { $loop($n + 1) }; $loop(0))', {}), run(crm, order, { taskId: 'task_2' })]);
    expect(outcomes).toEqual([
      { body: '{"email":"john@example.com","name":"John Smith","external_id":"task_1","total":403}' },
      { error: 'the transform ran longer than 250 ms and was stopped: an endless loop?' },
      { body: '{"email":"john@example.com","name":"John Smith","external_id":"task_2","total":403}' },
    ]);
  });

  it('evaluates only what compileTransform compiled', async () => {
    expect(await runTransform({ source: '1' }, {}, bindings)).toEqual({ ok: false, error: 'the transform was not compiled by compileTransform' });
  });
});

describe('compileTransform', () => {
  it.each([
    { why: 'a parse error says where, with JSONata\'s code', expression: '$number(tota', message: 'does not parse at character 12: Expected ")" before end of expression (JSONata S0203)', position: 12 },
    { why: 'an empty expression does not parse', expression: '', message: 'does not parse at character 0: Unexpected end of expression (JSONata S0207)', position: 0 },
    { why: 'a misspelt binding is refused, not left to send a body without it', expression: '{"external_id": $taskID}', message: 'uses $taskID at character 23, which nothing binds (a transform has $headers, $topic, $eventId, $deliveryId, $taskId, $source, $action)', position: 23 },
    { why: 'there is no $process', expression: '$process.env', message: 'uses $process at character 8, which nothing binds', position: 8 },
  ])('$why', ({ expression, message, position }) => {
    const outcome = compileTransform(expression);
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.message).toContain(message);
    expect(outcome.position).toBe(position);
  });

  it.each([
    { why: 'variables bound by :=, a lambda\'s parameters, @ and #', expression: '($total := $number(total_price); line_items@$item#$i.{"sku": $item.sku, "at": $i, "of": $total, "q": $map([1], function($one) { $one })})' },
    { why: 'JSONata\'s functions, $now and $millis among them', expression: '{"sum": $sum(line_items.quantity), "at": $now(), "ms": $millis()}' },
    { why: 'the context $ and the root $$', expression: 'line_items.{"sku": $.sku, "total": $$.total_price}' },
  ])('accepts $why', ({ expression }) => {
    expect(compileTransform(expression)).toMatchObject({ ok: true, transform: { source: expression } });
  });
});
