/**
 * The part of a filter's body condition that a GIN index over the body (jsonb_path_ops) can answer: a jsonpath
 * predicate that holds for every body the filter matches, and for few others. The content search
 * (`GET /api/deliveries?match=`) asks the index for candidates with it and decides each candidate with matchFilter,
 * so the filter's own rules, not the predicate's, say what matches; the predicate only has to let every match through.
 *
 * What translates: fields, literals, `$eq` with a literal, `$in` of literals, `$and`, `$or` whose every branch
 * translates, and lists (each entry found at that path). Everything else (`$gt`, `$startsWith`, `$not`, …) is left
 * to the check of each candidate; a filter with nothing that translates has no predicate, and the search reads
 * receipts in order instead (a bounded scan).
 *
 * Two places where the predicate is narrower than the filter, written here and in the docs:
 * - A number finds the number and the decimal strings senders write it as: 250 finds 250, "250", "250.0", "250.00",
 *   "250.000" and "250.0000"; the filter also reads "0250" or "250.00000" as 250, which the search does not find.
 * - Through a list the index sees one level: a field holding a list of lists is not found by a value in the inner one.
 */
import { isPlainObject } from './filter-syntax.ts';

/** The jsonpath predicate of `m` on the body, or null when nothing of it translates. */
export function bodyPathPredicate(m: unknown): string | null {
  return predicate(m, '$');
}

/** Places after the point that a decimal string of a number is looked for with: "250.00" is money's usual form. */
const MOST_DECIMALS = 4;

function predicate(m: unknown, path: string): string | null {
  if (Array.isArray(m)) return allOf(m.map((entry) => predicate(entry, path)));
  if (!isPlainObject(m)) return equality(m, path);
  const parts: (string | null)[] = [];
  for (const [key, operand] of Object.entries(m)) {
    if (!key.startsWith('$')) parts.push(predicate(operand, `${path}.${JSON.stringify(key)}`));
    else if (key === '$eq' && !isPlainObject(operand) && !Array.isArray(operand)) parts.push(equality(operand, path));
    else if (key === '$in' && Array.isArray(operand)) parts.push(anyOf(operand.map((value) => (isPlainObject(value) || Array.isArray(value) ? null : equality(value, path)))));
    else if (key === '$and' && Array.isArray(operand)) parts.push(allOf(operand.map((branch) => predicate(branch, path))));
    else if (key === '$or' && Array.isArray(operand)) parts.push(anyOf(operand.map((branch) => predicate(branch, path))));
  }
  return allOf(parts);
}

/** Conditions that must all hold: those that do not translate are left to the check of each candidate. */
function allOf(parts: (string | null)[]): string | null {
  const kept = parts.filter((part): part is string => part !== null);
  return kept.length === 0 ? null : kept.length === 1 ? kept[0]! : kept.map((part) => `(${part})`).join(' && ');
}

/** One of them must hold: a branch that does not translate could be the one, so then nothing of them does. */
function anyOf(parts: (string | null)[]): string | null {
  if (parts.length === 0 || parts.some((part) => part === null)) return null;
  return parts.length === 1 ? parts[0]! : parts.map((part) => `(${part})`).join(' || ');
}

function equality(value: unknown, path: string): string | null {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return null;
    return [String(value), ...decimalStrings(value).map((text) => JSON.stringify(text))].map((literal) => `${path} == ${literal}`).join(' || ');
  }
  if (typeof value === 'string' || typeof value === 'boolean' || value === null) return `${path} == ${JSON.stringify(value)}`;
  return null;
}

/** How senders write a number as a string: as it prints, then with trailing zeros up to MOST_DECIMALS places. */
function decimalStrings(value: number): string[] {
  const printed = String(value);
  if (/e/i.test(printed)) return [];
  const places = printed.split('.')[1]?.length ?? 0;
  const forms = [printed];
  for (let n = Math.max(1, places + 1); n <= MOST_DECIMALS; n++) forms.push(value.toFixed(n));
  return forms;
}
