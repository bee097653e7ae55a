/**
 * The config check of an action's `filter`: every problem at once, each with its path inside the filter, so the
 * schema can report them beside the rest of the config's problems instead of the gateway meeting them at ingest.
 * The evaluation is in filter.ts; this file decides only what a filter may look like.
 */
import { didYouMean } from '../nearest.ts';

export const FILTER_SECTIONS = ['body', 'headers', 'topic'] as const;

export type FilterProblem = { path: (string | number)[]; message: string };

const isList = (v: unknown): v is unknown[] => Array.isArray(v);

// What each operator takes: null when the operand is fine, else what it needs.
const anyValue = () => null;
const numberOrString = (v: unknown) =>
  typeof v === 'number' || typeof v === 'string' ? null : 'needs a number or a string (an ISO date compares as a string)';
const text = (v: unknown) => (typeof v === 'string' ? null : 'needs a string');
const values = (v: unknown) => (isList(v) ? null : 'needs a list of values');
const filters = (v: unknown) => (isList(v) && v.length > 0 ? null : 'needs a non-empty list of filters');

const OPERAND_PROBLEM = {
  $eq: anyValue,
  $neq: anyValue,
  $gt: numberOrString,
  $gte: numberOrString,
  $lt: numberOrString,
  $lte: numberOrString,
  // An empty $in never matches: surely a mistake, refused here rather than silently dropping every delivery.
  $in: (v: unknown) => values(v) ?? (isList(v) && v.length === 0 ? 'needs at least one value: an empty list matches nothing' : null),
  $nin: values,
  $startsWith: text,
  $endsWith: text,
  $contains: anyValue,
  $exist: (v: unknown) => (typeof v === 'boolean' ? null : 'needs true or false'),
  $or: filters,
  $and: filters,
  $not: anyValue,
} satisfies Record<string, (operand: unknown) => string | null>;

export type FilterOperator = keyof typeof OPERAND_PROBLEM;
export const FILTER_OPERATORS = Object.keys(OPERAND_PROBLEM) as FilterOperator[];

export const isFilterOperator = (key: string): key is FilterOperator => Object.hasOwn(OPERAND_PROBLEM, key);

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Every problem of a filter, with paths relative to the filter object; empty when it is fine. */
export function filterProblems(filter: unknown): FilterProblem[] {
  if (!isPlainObject(filter)) return [{ path: [], message: 'a filter is an object with body, headers or topic' }];
  const problems: FilterProblem[] = [];
  for (const [section, m] of Object.entries(filter)) {
    if (!(FILTER_SECTIONS as readonly string[]).includes(section)) {
      problems.push({ path: [section], message: `unknown key "${section}": ${didYouMean(section, FILTER_SECTIONS) ?? 'a filter has body, headers and topic'}` });
      continue;
    }
    if (section === 'headers') headerProblems(m, problems);
    collect(m, [section], problems);
  }
  return problems;
}

/** Every problem of one M on its own (a lookup's `found`), with paths relative to it. */
export function matcherProblems(m: unknown): FilterProblem[] {
  const problems: FilterProblem[] = [];
  collect(m, [], problems);
  return problems;
}

function collect(m: unknown, path: (string | number)[], problems: FilterProblem[]): void {
  if (isList(m)) {
    m.forEach((element, i) => collect(element, [...path, i], problems));
    return;
  }
  if (!isPlainObject(m)) return;
  for (const [key, operand] of Object.entries(m)) {
    const at = [...path, key];
    // A field whose name starts with "$" cannot be filtered on: the name is taken for an operator, and a typo
    // such as $gtt must not quietly become a field that is never there.
    if (!key.startsWith('$')) collect(operand, at, problems);
    else if (!isFilterOperator(key)) {
      const near = didYouMean(key, FILTER_OPERATORS);
      problems.push({ path: at, message: `unknown operator "${key}"${near ? `: ${near}` : `; the operators are ${FILTER_OPERATORS.join(', ')}`}` });
    } else {
      const problem = OPERAND_PROBLEM[key](operand);
      if (problem !== null) problems.push({ path: at, message: `${key} ${problem}` });
      else if (key === '$or' || key === '$and' || key === '$not') collect(operand, at, problems);
    }
  }
}

// Header values are strings under names, so headers' M names them; two names differing only in case would both
// be lower-cased onto one header, and one of them would be lost without a word.
function headerProblems(m: unknown, problems: FilterProblem[]): void {
  if (!isPlainObject(m)) {
    problems.push({ path: ['headers'], message: 'headers takes an object of header names, e.g. {"x-shop-domain": "a.example"}' });
    return;
  }
  const seen = new Map<string, string>();
  for (const name of Object.keys(m)) {
    if (name.startsWith('$')) continue;
    const earlier = seen.get(name.toLowerCase());
    if (earlier !== undefined) {
      problems.push({ path: ['headers', name], message: `"${name}" is also given as "${earlier}"; header names match in any case` });
    }
    seen.set(name.toLowerCase(), name);
  }
}
