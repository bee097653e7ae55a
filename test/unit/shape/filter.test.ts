import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { matchFilter, matchValue, type Filter, type FilterInput } from '../../../src/shape/filter.ts';
import { filterProblems, type FilterProblem } from '../../../src/shape/filter-syntax.ts';

// One row, one behaviour: [why, M, the body it meets, null (a match) or the detail]. The row's why is its name.
type Row = [why: string, m: unknown, body: unknown, detail: string | null];

const rows: Row[] = [
  // Literals: equal JSON values match. Against a number, a decimal numeric string is that number (senders write
  // money as strings); a number is not a string.
  ['a string matches an equal string', { status: 'paid' }, { status: 'paid' }, null],
  ['a string does not match another', { status: 'paid' }, { status: 'open' }, 'body.status: "open" is not "paid"'],
  ['a number matches an equal number', { total: 100 }, { total: 100.0 }, null],
  ['a numeric string equals the number it writes', { total: 5 }, { total: '5.00' }, null],
  ['a numeric string does not equal another number', { total: 5 }, { total: '5.01' }, 'body.total: "5.01" is not 5'],
  ['a string that only starts with digits is not a number', { total: 5 }, { total: '5 EUR' }, 'body.total: "5 EUR" is not 5'],
  ['an exponent is not a decimal amount', { total: 500 }, { total: '5e2' }, 'body.total: "5e2" is not 500'],
  ['a number does not equal a numeric string', { total: '5' }, { total: 5 }, 'body.total: 5 is not "5"'],
  ['false does not equal 0', { test: false }, { test: 0 }, 'body.test: 0 is not false'],
  ['null matches null', { x: null }, { x: null }, null],
  ['null does not match false', { x: null }, { x: false }, 'body.x: false is not null'],
  ['a literal matches a body that is that literal', false, false, null],

  // Objects: field by field, nested; fields the M does not name are ignored.
  ['a nested field matches, the others ignored', { product: { inventory: 0 } }, { product: { title: 'A', inventory: 0 } }, null],
  ['a nested mismatch names the whole path', { customer: { address: { country: 'DE' } } }, { customer: { address: { country: 'FR' } } }, 'body.customer.address.country: "FR" is not "DE"'],
  ['every field must match', { a: 1, b: 2 }, { a: 1, b: 3 }, 'body.b: 3 is not 2'],
  // Below a missing or non-object field, every field is missing (as an RFC 6901 lookup finds nothing there).
  ['a field under a missing field is missing', { customer: { name: 'x' } }, {}, 'body.customer.name: missing, not "x"'],
  ['a field under a string is missing', { customer: { name: 'x' } }, { customer: 'bob' }, 'body.customer.name: missing, not "x"'],
  ['an object M against a scalar body finds its fields missing', { type: 'x' }, 'x', 'body.type: missing, not "x"'],
  ['{} matches any present value', { x: {} }, { x: 5 }, null],
  ['{} still asks for the field', { x: {} }, {}, 'body.x: missing'],
  ['an inherited property is not a field', { constructor: { $exist: true } }, {}, 'body.constructor: missing, but $exist: true'],

  // Arrays of scalars: a literal matches an array holding it; a list in M asks for every entry (Hookdeck's "contains all").
  ['a literal matches an array that holds it', { tags: 'vip' }, { tags: ['a', 'vip'] }, null],
  ['a literal does not match an array without it', { tags: 'vip' }, { tags: ['a', 'b'] }, 'body.tags: ["a","b"] does not contain "vip"'],
  ['a literal does not match an empty array', { tags: 'a' }, { tags: [] }, 'body.tags: [] does not contain "a"'],
  ['a list matches an array holding each entry, in any order', { tags: ['a', 'b'] }, { tags: ['b', 'c', 'a'] }, null],
  ['a list names the first entry the array lacks', { tags: ['a', 'z'] }, { tags: ['a', 'b'] }, 'body.tags: ["a","b"] does not contain "z"'],
  ['a list does not match a scalar', { tags: ['a'] }, { tags: 'a' }, 'body.tags: "a", not a list containing ["a"]'],
  ['$eq with a list is exact', { tags: { $eq: ['a', 'b'] } }, { tags: ['a', 'b'] }, null],
  ['$eq with a list refuses a longer array', { tags: { $eq: ['a', 'b'] } }, { tags: ['a', 'b', 'c'] }, 'body.tags: ["a","b","c"] is not ["a","b"]'],
  ['a literal matches inside nested arrays', { m: 3 }, { m: [[1, 2], [3]] }, null],
  ['a comparison matches an array when one element meets it', { scores: { $gte: 5 } }, { scores: [1, 7] }, null],
  // Comparisons in one object must hold for the same element; $and's branches each find their own.
  ['comparisons in one object need one element meeting all', { scores: { $gte: 1, $lt: 10 } }, { scores: [0, 20] }, 'body.scores[]: 0 is not >= 1'],
  ['$and branches may be met by different elements', { scores: { $and: [{ $gte: 1 }, { $lt: 10 }] } }, { scores: [0, 20] }, null],
  ['a comparison finds no element in an empty array', { scores: { $gt: 0 } }, { scores: [] }, 'body.scores: [] has no elements'],
  ['$in matches an array with an element in the list', { tags: { $in: ['vip', 'gold'] } }, { tags: ['x', 'gold'] }, null],
  ['$in names an array with none of the list', { tags: { $in: ['vip', 'gold'] } }, { tags: ['x'] }, 'body.tags: ["x"] has none of ["vip","gold"]'],
  // Negations on an array: no element may be equal, or in the list.
  ['$neq refuses an array holding the value', { tags: { $neq: 'spam' } }, { tags: ['ok', 'spam'] }, 'body.tags: ["ok","spam"] is excluded by $neq "spam"'],
  ['$neq matches an array without the value', { tags: { $neq: 'spam' } }, { tags: ['ok'] }, null],
  ['$nin refuses an array with an element in the list', { tags: { $nin: ['spam', 'junk'] } }, { tags: ['ok', 'junk'] }, 'body.tags: ["ok","junk"] is excluded by $nin ["spam","junk"]'],
  ['$nin matches an array with no element in the list', { tags: { $nin: ['spam', 'junk'] } }, { tags: ['ok'] }, null],

  // Arrays of objects: an object M matches an array when one element matches all of it.
  ['an object matches one element of an array', { line_items: { sku: 'A' } }, { line_items: [{ sku: 'B' }, { sku: 'A' }] }, null],
  ['an element path is written with []', { line_items: { quantity: { $gte: 2 } } }, { line_items: [{ quantity: 1 }] }, 'body.line_items[].quantity: 1 is not >= 2'],
  ['the fields of an object M hold in one element, the first failure named', { line_items: { sku: 'A', quantity: { $gte: 2 } } }, { line_items: [{ sku: 'A', quantity: 1 }, { sku: 'B', quantity: 5 }] }, 'body.line_items[].quantity: 1 is not >= 2'],
  ['a list of objects asks for an element matching each', { line_items: [{ sku: 'A' }, { sku: 'B' }] }, { line_items: [{ sku: 'B', q: 1 }, { sku: 'A' }] }, null],
  ['a list of objects names the entry no element matches', { line_items: [{ sku: 'A' }, { sku: 'B' }] }, { line_items: [{ sku: 'A' }] }, 'body.line_items: [{"sku":"A"}] does not contain {"sku":"B"}'],
  ['$contains finds an equal element', { line_items: { $contains: { sku: 'A' } } }, { line_items: [{ sku: 'A' }] }, null],
  // $contains and $eq compare whole values: an object operand is not a partial match, unlike an object M.
  ['$contains wants an element equal in full', { line_items: { $contains: { sku: 'A' } } }, { line_items: [{ sku: 'A', q: 1 }] }, 'body.line_items: [{"sku":"A","q":1}] does not contain {"sku":"A"}'],
  ['$eq with an object is exact', { x: { $eq: { a: 1 } } }, { x: { a: 1, b: 2 } }, 'body.x: {"a":1,"b":2} is not {"a":1}'],
  ['$eq with an object ignores key order', { x: { $eq: { a: 1, b: 2 } } }, { x: { b: 2, a: 1 } }, null],

  // Operators on scalars.
  ['$eq matches an equal value', { x: { $eq: 'a' } }, { x: 'a' }, null],
  ['$neq matches a different value', { status: { $neq: 'cancelled' } }, { status: 'paid' }, null],
  ['$neq refuses an equal value', { status: { $neq: 'cancelled' } }, { status: 'cancelled' }, 'body.status: "cancelled" is excluded by $neq "cancelled"'],
  ['$neq matches null, which is a value', { x: { $neq: 'a' } }, { x: null }, null],
  ['$gte refuses a smaller number', { total_price: { $gte: 100 } }, { total_price: 40 }, 'body.total_price: 40 is not >= 100'],
  ['$gte matches an equal number', { total_price: { $gte: 100 } }, { total_price: 100 }, null],
  ['$gt refuses an equal number', { total_price: { $gt: 100 } }, { total_price: 100 }, 'body.total_price: 100 is not > 100'],
  ['$lt refuses an equal number', { n: { $lt: 5 } }, { n: 5 }, 'body.n: 5 is not < 5'],
  ['$lte matches an equal number', { n: { $lte: 5 } }, { n: 5 }, null],
  ['$gte and $lt together make a range', { n: { $gte: 1, $lt: 10 } }, { n: 10 }, 'body.n: 10 is not < 10'],
  ['strings compare as strings: ISO dates in order', { created_at: { $gte: '2024-01-01' } }, { created_at: '2024-03-05T10:00:00Z' }, null],
  ['an earlier ISO date is not >= a later one', { created_at: { $gte: '2024-01-01' } }, { created_at: '2023-12-31' }, 'body.created_at: "2023-12-31" is not >= "2024-01-01"'],
  // Mixed types never compare, and the detail says which met.
  ['a numeric string compares as the number it writes', { total_price: { $gt: 100 } }, { total_price: '250.00' }, null],
  ['a smaller numeric string is not greater', { total_price: { $gt: 100 } }, { total_price: '99.99' }, 'body.total_price: "99.99" is not > 100'],
  ['numeric strings compare by value, not as text', { total_price: { $gte: 100 } }, { total_price: '45.00' }, 'body.total_price: "45.00" is not >= 100'],
  ['a negative numeric string is read with its sign', { balance: { $lt: 0 } }, { balance: '-12.50' }, null],
  ['a string that is not a number never compares with one', { total: { $gte: 100 } }, { total: 'lots' }, 'body.total: "lots" is not >= 100 (string vs number)'],
  ['against a string operand, strings compare as text', { total: { $gt: '100' } }, { total: '99.99' }, null],
  ['a number never compares with a string', { year: { $lt: '2024' } }, { year: 2023 }, 'body.year: 2023 is not < "2024" (number vs string)'],
  ['null never compares with a number', { n: { $gt: 0 } }, { n: null }, 'body.n: null is not > 0 (null vs number)'],
  ['$in matches a value in the list', { type: { $in: ['a', 'b'] } }, { type: 'b' }, null],
  ['$in refuses a value not in the list', { type: { $in: ['a', 'b'] } }, { type: 'c' }, 'body.type: "c" is not one of ["a","b"]'],
  ['$in takes a numeric string for its number', { id: { $in: [1, 2] } }, { id: '1' }, null],
  ['$nin excludes a numeric string for its number', { id: { $nin: [1, 2] } }, { id: '2.0' }, 'body.id: "2.0" is excluded by $nin [1,2]'],
  ['$in does not take a number for a numeric string', { id: { $in: ['1', '2'] } }, { id: 1 }, 'body.id: 1 is not one of ["1","2"]'],
  ['$nin matches a value not in the list', { type: { $nin: ['a'] } }, { type: 'b' }, null],
  ['$nin refuses a value in the list', { type: { $nin: ['a'] } }, { type: 'a' }, 'body.type: "a" is excluded by $nin ["a"]'],
  ['$startsWith matches a prefix', { ref: { $startsWith: 'refs/heads/' } }, { ref: 'refs/heads/main' }, null],
  ['$startsWith refuses another prefix', { ref: { $startsWith: 'refs/heads/' } }, { ref: 'refs/tags/v1' }, 'body.ref: "refs/tags/v1" does not start with "refs/heads/"'],
  ['$startsWith refuses a number', { ref: { $startsWith: '5' } }, { ref: 5 }, 'body.ref: 5 does not start with "5" (number vs string)'],
  ['$endsWith matches a suffix', { email: { $endsWith: '@example.com' } }, { email: 'a@example.com' }, null],
  ['$endsWith refuses another suffix', { email: { $endsWith: '@example.com' } }, { email: 'a@example.org' }, 'body.email: "a@example.org" does not end with "@example.com"'],
  ['$contains matches a substring', { title: { $contains: 'urgent' } }, { title: 'very urgent fix' }, null],
  ['$contains refuses a string without it', { title: { $contains: 'urgent' } }, { title: 'fix' }, 'body.title: "fix" does not contain "urgent"'],
  ['$contains refuses a number', { n: { $contains: '4' } }, { n: 42 }, 'body.n: 42 does not contain "4" (number, not a string or a list)'],
  ['$contains matches an array element', { tags: { $contains: 'vip' } }, { tags: ['vip'] }, null],
  ['$contains refuses an array without the element', { tags: { $contains: 'vip' } }, { tags: ['a', 'b'] }, 'body.tags: ["a","b"] does not contain "vip"'],
  ['$exist: true matches null, which is present', { x: { $exist: true } }, { x: null }, null],
  ['$exist: true refuses a missing field', { x: { $exist: true } }, {}, 'body.x: missing, but $exist: true'],
  ['$exist: false matches a missing field', { x: { $exist: false } }, {}, null],
  ['$exist: false refuses null, which is present', { x: { $exist: false } }, { x: null }, 'body.x: null is present, but $exist: false'],
  ['$exist: false matches below a missing parent', { a: { b: { $exist: false } } }, {}, null],
  ['$exist and $startsWith together', { url: { $exist: true, $startsWith: 'https://' } }, { url: 'http://x' }, 'body.url: "http://x" does not start with "https://"'],

  // $or, $and, $not and their combinations.
  ['$or matches when one branch does', { $or: [{ type: 'a' }, { type: 'b' }] }, { type: 'b' }, null],
  ['$or names the first branch’s reason', { $or: [{ type: 'a' }, { type: 'b' }] }, { type: 'c' }, 'body: none of $or matched (body.type: "c" is not "a")'],
  ['$or on a field lists its values', { status: { $or: ['active', 'pending'] } }, { status: 'closed' }, 'body.status: none of $or matched (body.status: "closed" is not "active")'],
  ['$and names the first branch that fails', { total: { $and: [{ $gte: 10 }, { $lte: 20 }] } }, { total: 25 }, 'body.total: 25 is not <= 20'],
  ['$and beside fields: all must hold', { type: 'a', $and: [{ n: 1 }] }, { type: 'a', n: 2 }, 'body.n: 2 is not 1'],
  ['$not refuses what its M matches', { $not: { status: 'deleted' } }, { status: 'deleted' }, 'body: {"status":"deleted"} matches $not {"status":"deleted"}'],
  ['$not matches what its M refuses', { $not: { status: 'deleted' } }, { status: 'ok' }, null],
  ['$or of $and: one $and holds', { $or: [{ $and: [{ a: 1 }, { b: 2 }] }, { c: 3 }] }, { a: 1, b: 2 }, null],
  ['$or of $and: none holds', { $or: [{ $and: [{ a: 1 }, { b: 2 }] }, { c: 3 }] }, { a: 1 }, 'body: none of $or matched (body.b: missing, not 2)'],
  ['$not of $or refuses either value', { $not: { $or: [{ type: 'a' }, { type: 'b' }] } }, { type: 'b' }, 'body: {"type":"b"} matches $not {"$or":[{"type":"a"},{"type":"b"}]}'],
  ['$or with a $not branch', { $or: [{ $not: { type: 'a' } }, { vip: true }] }, { type: 'a', vip: true }, null],
  ['fields beside $not: both hold', { event: { type: 'message' }, $not: { event: { subtype: { $or: ['changed', 'deleted'] } } } }, { event: { type: 'message', subtype: 'deleted' } }, 'body: {"event":{"type":"message","subtype":"deleted"}} matches $not {"event":{"subtype":{"$or":["changed","deleted"]}}}'],

  // Missing fields: only $exist: false and $not (and $or/$and through them) match one. $neq and $nin want a
  // present value, as in Hookdeck, where a key the payload lacks fails the filter; $not says "absent or different".
  ['null does not match a missing field', { x: null }, {}, 'body.x: missing, not null'],
  ['$neq refuses a missing field', { status: { $neq: 'cancelled' } }, {}, 'body.status: missing, and $neq needs a value'],
  ['$nin refuses a missing field', { status: { $nin: ['cancelled'] } }, {}, 'body.status: missing, and $nin needs a value'],
  ['$not on a field matches it missing', { status: { $not: 'cancelled' } }, {}, null],
  ['$not above a field matches it missing, the same', { $not: { status: 'cancelled' } }, {}, null],
  ['$not of $exist: true matches a missing field', { x: { $not: { $exist: true } } }, {}, null],
  ['$not refuses a missing field its M accepts', { x: { $not: { $exist: false } } }, {}, 'body.x: missing matches $not {"$exist":false}'],
  ['$or with $exist: false accepts a missing field', { x: { $or: [{ $exist: false }, 'a'] } }, {}, null],
  ['a comparison refuses a missing field', { total: { $gte: 1 } }, {}, 'body.total: missing, not >= 1'],
  ['$in refuses a missing field', { type: { $in: ['a'] } }, {}, 'body.type: missing, not one of ["a"]'],
  ['$startsWith refuses a missing field', { ref: { $startsWith: 'x' } }, {}, 'body.ref: missing, not starting with "x"'],
  ['$contains refuses a missing field', { tags: { $contains: 'a' } }, {}, 'body.tags: missing, not containing "a"'],
  ['a list refuses a missing field', { tags: ['a'] }, {}, 'body.tags: missing, not a list containing ["a"]'],

  // Values in details are JSON, cut to 60 characters.
  ['a long value is cut to 60 characters', { note: 'x' }, { note: 'a'.repeat(100) }, `body.note: "${'a'.repeat(58)}… is not "x"`],
];

describe('matchValue', () => {
  it.each(rows)('%s', (_why, m, body, detail) => {
    expect(matchValue(m, body, 'body')).toBe(detail);
  });

  it('starts its paths where it is told, as for a lookup’s answer', () => {
    expect(matchValue({ data: { $exist: true } }, { data: [] }, 'answer')).toBeNull();
    expect(matchValue({ data: { id: 'x' } }, { data: [] }, 'answer')).toBe('answer.data: [] has no elements');
  });
});

// The choices above, stated once more as identities over arbitrary JSON, so no odd value slips between the rows.
describe('matchValue identities', () => {
  const scalar = fc.oneof(fc.string({ maxLength: 3 }), fc.integer({ min: -3, max: 3 }), fc.boolean(), fc.constant(null));
  const value = fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined }); // undefined: the field is missing
  const matches = (m: unknown, v: unknown) => matchValue(m, v, 'body') === null;

  it('a literal is $eq of itself', () => {
    fc.assert(fc.property(scalar, value, (x, v) => matches(x, v) === matches({ $eq: x }, v)));
  });

  it('$neq is a present value that is not $eq; $nin likewise of $in', () => {
    fc.assert(fc.property(scalar, value, (x, v) => matches({ $neq: x }, v) === (v !== undefined && !matches({ $eq: x }, v))));
    fc.assert(fc.property(fc.array(scalar, { minLength: 1 }), value, (xs, v) => matches({ $nin: xs }, v) === (v !== undefined && !matches({ $in: xs }, v))));
  });

  it('$not matches exactly what its M does not', () => {
    fc.assert(fc.property(scalar, value, (x, v) => matches({ $not: { $gte: x } }, v) === !matches({ $gte: x }, v)));
  });

  it('$exist tells present from missing, null being present', () => {
    fc.assert(fc.property(value, (v) => matches({ $exist: true }, v) === (v !== undefined) && matches({ $exist: false }, v) === (v === undefined)));
  });
});

const input = (over: Partial<FilterInput> = {}): FilterInput => ({
  body: { total_price: 150 },
  headers: { 'x-shop-domain': 'a.example', 'x-count': '7' },
  topic: 'orders/create',
  ...over,
});

type FilterRow = [why: string, filter: Filter, input: FilterInput, detail: string | null];

const filterRows: FilterRow[] = [
  ['an empty filter matches every delivery', {}, input(), null],
  ['body, headers and topic all match', { body: { total_price: { $gte: 100 } }, headers: { 'x-shop-domain': 'a.example' }, topic: 'orders/create' }, input(), null],
  ['the body is checked first', { body: { total_price: { $gte: 200 } }, topic: 'orders/paid' }, input(), 'body.total_price: 150 is not >= 200'],
  ['the topic is checked after the body and headers', { body: { total_price: 150 }, topic: 'orders/paid' }, input(), 'topic: "orders/create" is not "orders/paid"'],
  ['a topic outside the list names the list', { topic: { $in: ['orders/create'] } }, input({ topic: 'orders/paid' }), 'topic: "orders/paid" is not one of ["orders/create"]'],
  // A delivery without a topic has topic null, a value: `topic: null` selects it, and $exist cannot.
  ['a null topic matches topic: null', { topic: null }, input({ topic: null }), null],
  ['a null topic is a value, not missing', { topic: 'orders/create' }, input({ topic: null }), 'topic: null is not "orders/create"'],
  ['a body that is not an object has no fields', { body: { total_price: 150 } }, input({ body: 'plain text' }), 'body.total_price: missing, not 150'],
  // Header names are matched in any case (they arrive lower-cased); their values exactly, and as strings.
  ['header names match in any case', { headers: { 'X-Shop-Domain': 'a.example' } }, input(), null],
  ['header names match in any case inside $or', { headers: { $or: [{ 'X-Other': '1' }, { 'X-Shop-Domain': 'a.example' }] } }, input(), null],
  ['header names match in any case inside $not', { headers: { $not: { 'X-Shop-Domain': 'a.example' } } }, input(), 'headers: {"x-shop-domain":"a.example","x-count":"7"} matches $not {"x-shop-domain":"a.example"}'],
  ['a missing header names the wanted value', { headers: { 'x-shop-domain': 'a.example' } }, input({ headers: {} }), 'headers.x-shop-domain: missing, not "a.example"'],
  ['header values match case-sensitively', { headers: { 'x-shop-domain': 'A.example' } }, input(), 'headers.x-shop-domain: "a.example" is not "A.example"'],
  ['a numeric header value compares with a number', { headers: { 'x-count': { $gt: 5 } } }, input(), null],
  ['a numeric header value is read as its number', { headers: { 'x-count': { $gt: 7 } } }, input(), 'headers.x-count: "7" is not > 7'],
  ['header values compare as strings', { headers: { 'x-count': { $gt: '5' } } }, input(), null],
];

describe('matchFilter', () => {
  it.each(filterRows)('%s', (_why, filter, delivery, detail) => {
    expect(matchFilter(filter, delivery)).toBe(detail);
  });
});

const OPERATORS = '$eq, $neq, $gt, $gte, $lt, $lte, $in, $nin, $startsWith, $endsWith, $contains, $exist, $or, $and, $not';

type ProblemRow = [why: string, filter: unknown, problems: FilterProblem[]];

const problemRows: ProblemRow[] = [
  ['a filter using every operator is fine', {
    body: {
      total_price: { $gte: 100, $lt: '1000', $gt: 1, $lte: 2 }, tags: ['a', { $contains: 'b' }], note: null,
      $or: [{ a: { $in: [1] } }, { b: { $nin: [] } }], $and: [{ c: { $eq: { any: 'json' } } }], $not: { d: { $neq: [1] } },
      e: { $startsWith: 'x', $endsWith: 'y', $exist: true },
    },
    headers: { 'x-a': '1', $or: [{ 'X-B': '2' }] },
    topic: { $in: ['orders/create'] },
  }, []],
  ['an empty filter is fine', {}, []],
  ['a filter must be an object', 'body', [{ path: [], message: 'a filter is an object with body, headers or topic' }]],
  ['a filter must not be a list', [], [{ path: [], message: 'a filter is an object with body, headers or topic' }]],
  ['null is not a filter', null, [{ path: [], message: 'a filter is an object with body, headers or topic' }]],
  ['only body, headers and topic', { query: {} }, [{ path: ['query'], message: 'unknown key "query": a filter has body, headers and topic' }]],
  ['an unknown operator lists the operators', { body: { total_price: { $regex: 'a.*' } } }, [{ path: ['body', 'total_price', '$regex'], message: `unknown operator "$regex"; the operators are ${OPERATORS}` }]],
  ['a misspelt operator is told the nearest ones', { body: { total_price: { $gtt: 100 } } }, [{ path: ['body', 'total_price', '$gtt'], message: 'unknown operator "$gtt": did you mean "$gt" or "$gte"?' }]],
  ['operator names are case-sensitive', { body: { ref: { $startswith: 'x' } } }, [{ path: ['body', 'ref', '$startswith'], message: 'unknown operator "$startswith": did you mean "$startsWith"?' }]],
  ['a misspelt section is told the one meant', { heders: {} }, [{ path: ['heders'], message: 'unknown key "heders": did you mean "headers"?' }]],
  ['$in needs a list', { body: { type: { $in: 'a' } } }, [{ path: ['body', 'type', '$in'], message: '$in needs a list of values' }]],
  ['$in needs a value in its list', { body: { type: { $in: [] } } }, [{ path: ['body', 'type', '$in'], message: '$in needs at least one value: an empty list matches nothing' }]],
  ['$nin needs a list', { body: { type: { $nin: 'a' } } }, [{ path: ['body', 'type', '$nin'], message: '$nin needs a list of values' }]],
  ['$exist needs a boolean', { body: { x: { $exist: 'yes' } } }, [{ path: ['body', 'x', '$exist'], message: '$exist needs true or false' }]],
  ['$gt needs a number or a string', { body: { x: { $gt: true } } }, [{ path: ['body', 'x', '$gt'], message: '$gt needs a number or a string (an ISO date compares as a string)' }]],
  ['$lte does not take a list', { body: { x: { $lte: [1] } } }, [{ path: ['body', 'x', '$lte'], message: '$lte needs a number or a string (an ISO date compares as a string)' }]],
  ['$startsWith needs a string', { body: { x: { $startsWith: 5 } } }, [{ path: ['body', 'x', '$startsWith'], message: '$startsWith needs a string' }]],
  ['$endsWith needs a string', { body: { x: { $endsWith: null } } }, [{ path: ['body', 'x', '$endsWith'], message: '$endsWith needs a string' }]],
  ['$or needs a non-empty list', { body: { $or: [] } }, [{ path: ['body', '$or'], message: '$or needs a non-empty list of filters' }]],
  ['$and needs a list', { body: { $and: { a: 1 } } }, [{ path: ['body', '$and'], message: '$and needs a non-empty list of filters' }]],
  ['problems inside $or are found, with the branch index', { body: { $or: [{ a: 1 }, { a: { $gtt: 1 } }] } }, [{ path: ['body', '$or', 1, 'a', '$gtt'], message: 'unknown operator "$gtt": did you mean "$gt" or "$gte"?' }]],
  ['problems inside $not are found', { topic: { $not: { $exist: 1 } } }, [{ path: ['topic', '$not', '$exist'], message: '$exist needs true or false' }]],
  ['problems inside a list are found', { body: { tags: ['a', { $in: 'b' }] } }, [{ path: ['body', 'tags', 1, '$in'], message: '$in needs a list of values' }]],
  // The operands of $eq, $neq and $contains are values, not filters: "$gtt" there is data.
  ['the operand of $eq is a value, not checked', { body: { a: { $eq: { $gtt: 1 } } } }, []],
  ['headers take an object of names', { headers: 'x-a' }, [{ path: ['headers'], message: 'headers takes an object of header names, e.g. {"x-shop-domain": "a.example"}' }]],
  ['header names differing only in case are one header', { headers: { 'X-A': '1', 'x-a': '2' } }, [{ path: ['headers', 'x-a'], message: '"x-a" is also given as "X-A"; header names match in any case' }]],
  ['every problem is listed at once, in order', { query: 1, body: { $gtt: 1, a: { $exist: 'no' } } }, [
    { path: ['query'], message: 'unknown key "query": a filter has body, headers and topic' },
    { path: ['body', '$gtt'], message: 'unknown operator "$gtt": did you mean "$gt" or "$gte"?' },
    { path: ['body', 'a', '$exist'], message: '$exist needs true or false' },
  ]],
];

describe('filterProblems', () => {
  it.each(problemRows)('%s', (_why, filter, problems) => {
    expect(filterProblems(filter)).toEqual(problems);
  });
});
