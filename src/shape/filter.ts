/**
 * An action's content filter: a pure function of a delivery's parsed body, headers and topic, decided once at
 * ingest. null means the delivery makes a task; otherwise one short reason, read by people and pinned in tests.
 *
 * The syntax is Hookdeck's (Convoy's is close). Where their docs leave a choice open, this is the one made, each
 * with rows in test/unit/shape/filter.test.ts:
 * - null is a value, missing is not. A missing field is matched only by `$exist: false` and `$not` (and by
 *   `$or`/`$and` through them); every other condition needs it present, `$neq`/`$nin` too, as in Hookdeck, where
 *   a key the payload lacks fails the filter. `$not` is how to say "absent or different".
 * - A literal or an object matches an array when one element does; a list in M needs an element for each of its
 *   entries (Hookdeck's "must contain all"); `$eq` with a list is exact.
 * - Against an array, the fields and `$gt`/`$gte`/`$lt`/`$lte`/`$startsWith`/`$endsWith` of one object must hold
 *   for one element together; the other operators see the array whole, so `$neq`/`$nin` mean no element is
 *   equal or in the list, and each `$and` branch finds its own element.
 * - Senders write money and counts as strings (Shopify's `"total_price": "250.00"`): against a number operand, a
 *   value that is a decimal numeric string is read as that number, by every operator. Against a string operand,
 *   strings compare as strings.
 * - Order is number with number (a numeric string read as one, above) or string with string (ISO dates of one
 *   format order as dates); other pairs never match, and the detail names the two types.
 */
import { isPlainObject } from './filter-syntax.ts';

export type Filter = { body?: unknown; headers?: unknown; topic?: unknown };
export type FilterInput = { body: unknown; headers: Record<string, string>; topic: string | null };

/** null when the delivery passes every section of the filter; otherwise the first reason it does not. */
export function matchFilter(filter: Filter, input: FilterInput): string | null {
  return (
    (filter.body === undefined ? null : matchValue(filter.body, input.body, 'body')) ??
    (filter.headers === undefined ? null : matchValue(lowerCaseNames(filter.headers), input.headers, 'headers')) ??
    (filter.topic === undefined ? null : matchValue(filter.topic, input.topic, 'topic'))
  );
}

/** The filter's engine on any JSON value (undefined is missing); the detail's paths start at `path`. */
export function matchValue(m: unknown, value: unknown, path: string): string | null {
  if (Array.isArray(m)) return containsEach(m, value, path);
  if (isPlainObject(m)) return matchObject(m, value, path);
  return equalsOrHas(value, m) ? null : `${path}: ${notEqual(value, m)}`;
}

function containsEach(m: unknown[], value: unknown, path: string): string | null {
  if (!Array.isArray(value)) return `${path}: ${show(value)}, not a list containing ${show(m)}`;
  for (const wanted of m) {
    if (!value.some((element) => matchValue(wanted, element, path) === null)) {
      return `${path}: ${show(value)} does not contain ${show(wanted)}`;
    }
  }
  return null;
}

type Scalar = string | number;

// The conditions one element of an array must meet together; the rest see the array whole. Each with how it
// reads when it fails, and the condition a missing value does not meet.
const ELEMENT_WISE: Record<string, [holds: (a: Scalar, b: Scalar) => boolean, fails: string, condition: string]> = {
  $gt: [(a, b) => a > b, 'is not >', '>'],
  $gte: [(a, b) => a >= b, 'is not >=', '>='],
  $lt: [(a, b) => a < b, 'is not <', '<'],
  $lte: [(a, b) => a <= b, 'is not <=', '<='],
  $startsWith: [(a, b) => String(a).startsWith(String(b)), 'does not start with', 'starting with'],
  $endsWith: [(a, b) => String(a).endsWith(String(b)), 'does not end with', 'ending with'],
};

function matchObject(m: Record<string, unknown>, value: unknown, path: string): string | null {
  const together: [string, unknown][] = [];
  for (const [key, operand] of Object.entries(m)) {
    if (!key.startsWith('$') || Object.hasOwn(ELEMENT_WISE, key)) together.push([key, operand]);
    else {
      const failed = matchWhole(key, operand, value, path);
      if (failed !== null) return failed;
    }
  }
  if (together.length > 0) return matchTogether(together, value, path);
  // {} states no condition, but like every M other than $exist: false and $not it asks for a value.
  return value === undefined && Object.keys(m).length === 0 ? `${path}: missing` : null;
}

function matchTogether(conditions: [string, unknown][], value: unknown, path: string): string | null {
  if (Array.isArray(value)) {
    let first: string | null = null;
    for (const element of value) {
      const failed = matchTogether(conditions, element, `${path}[]`);
      if (failed === null) return null;
      first ??= failed;
    }
    return first ?? `${path}: [] has no elements`;
  }
  for (const [key, operand] of conditions) {
    const failed = key.startsWith('$')
      ? compare(key, operand, value, path)
      : matchValue(operand, isPlainObject(value) && Object.hasOwn(value, key) ? value[key] : undefined, `${path}.${key}`);
    if (failed !== null) return failed;
  }
  return null;
}

function compare(op: string, operand: unknown, value: unknown, path: string): string | null {
  const [holds, fails, condition] = ELEMENT_WISE[op]!;
  if (value === undefined) return `${path}: missing, not ${condition} ${show(operand)}`;
  const wanted = op === '$startsWith' || op === '$endsWith' ? 'string' : kind(operand);
  const read = readAgainst(value, operand);
  const comparable = (wanted === 'string' || wanted === 'number') && kind(read) === wanted && kind(operand) === wanted;
  if (comparable && holds(read as Scalar, operand as Scalar)) return null;
  const why = kind(read) === wanted ? '' : ` (${kind(value)} vs ${wanted})`;
  return `${path}: ${show(value)} ${fails} ${show(operand)}${why}`;
}

/** Digits with an optional sign and decimal part: how senders write an amount. No exponent, no spaces, no `0x`. */
const DECIMAL = /^-?\d+(\.\d+)?$/;

/** The value as the operand reads it: a decimal numeric string is a number against a number. */
function readAgainst(value: unknown, operand: unknown): unknown {
  return typeof operand === 'number' && typeof value === 'string' && DECIMAL.test(value) ? Number(value) : value;
}

function matchWhole(op: string, operand: unknown, value: unknown, path: string): string | null {
  const list = Array.isArray(operand) ? operand : [];
  switch (op) {
    case '$eq':
      return equalsOrHas(value, operand) ? null : `${path}: ${notEqual(value, operand)}`;
    case '$in':
      if (list.some((x) => equalsOrHas(value, x))) return null;
      if (value === undefined) return `${path}: missing, not one of ${show(operand)}`;
      return `${path}: ${show(value)} ${Array.isArray(value) ? 'has none of' : 'is not one of'} ${show(operand)}`;
    case '$neq':
    case '$nin': {
      if (value === undefined) return `${path}: missing, and ${op} needs a value`;
      const excluded = op === '$neq' ? equalsOrHas(value, operand) : list.some((x) => equalsOrHas(value, x));
      return excluded ? `${path}: ${show(value)} is excluded by ${op} ${show(operand)}` : null;
    }
    case '$contains': {
      if (value === undefined) return `${path}: missing, not containing ${show(operand)}`;
      if (contains(value, operand)) return null;
      const why = typeof value === 'string' || Array.isArray(value) ? '' : ` (${kind(value)}, not a string or a list)`;
      return `${path}: ${show(value)} does not contain ${show(operand)}${why}`;
    }
    case '$exist':
      if ((value !== undefined) === operand) return null;
      return operand === true ? `${path}: missing, but $exist: true` : `${path}: ${show(value)} is present, but $exist: false`;
    case '$not':
      return matchValue(operand, value, path) === null ? `${path}: ${show(value)} matches $not ${show(operand)}` : null;
    case '$and':
      for (const branch of list) {
        const failed = matchValue(branch, value, path);
        if (failed !== null) return failed;
      }
      return null;
    case '$or': {
      let first: string | null = null;
      for (const branch of list) {
        const failed = matchValue(branch, value, path);
        if (failed === null) return null;
        first ??= failed;
      }
      return `${path}: none of $or matched (${first ?? 'no branches'})`;
    }
    default:
      return `${path}: unknown operator ${op}`;
  }
}

// A substring of a string, or an element (equal in full, not a partial match) of an array.
function contains(value: unknown, x: unknown): boolean {
  if (typeof value === 'string') return typeof x === 'string' && value.includes(x);
  return Array.isArray(value) && value.some((element) => equal(element, x));
}

// Equal to x, or (for an array) holding an element that is: how a literal matches an array.
function equalsOrHas(value: unknown, x: unknown): boolean {
  return equal(value, x) || (Array.isArray(value) && value.some((element) => equalsOrHas(element, x)));
}

function notEqual(value: unknown, x: unknown): string {
  if (value === undefined) return `missing, not ${show(x)}`;
  return `${show(value)} ${Array.isArray(value) && !Array.isArray(x) ? 'does not contain' : 'is not'} ${show(x)}`;
}

// JSON equality of a value `a` and an operand `b`: === for scalars, but a decimal numeric string equals the number
// it writes ("5.00" is 5, while 5 is not "5"); element by element for lists, key by key in any order for objects.
function equal(a: unknown, b: unknown): boolean {
  if (readAgainst(a, b) === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => equal(x, b[i]));
  if (!isPlainObject(a) || !isPlainObject(b)) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && equal(a[k], b[k]));
}

function kind(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'list' : typeof v;
}

const WIDTH = 60;

function show(v: unknown): string {
  if (v === undefined) return 'missing';
  const json = JSON.stringify(v);
  return json.length <= WIDTH ? json : `${json.slice(0, WIDTH - 1)}…`;
}

// Header names arrive lower-cased, so the filter's are lower-cased too, through $or/$and/$not at the top.
function lowerCaseNames(m: unknown): unknown {
  if (!isPlainObject(m)) return m;
  return Object.fromEntries(
    Object.entries(m).map(([key, operand]) => {
      if (key === '$or' || key === '$and') return [key, Array.isArray(operand) ? operand.map(lowerCaseNames) : operand];
      if (key === '$not') return [key, lowerCaseNames(operand)];
      return [key.startsWith('$') ? key : key.toLowerCase(), operand];
    }),
  );
}
