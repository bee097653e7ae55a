import { describe, expect, it } from 'vitest';
import { filterProblems, type FilterProblem } from '../../../src/shape/filter-syntax.ts';

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
  ['an unknown operator lists the operators', { body: { total_price: { $gtt: 100 } } }, [{ path: ['body', 'total_price', '$gtt'], message: `unknown operator "$gtt"; the operators are ${OPERATORS}` }]],
  ['operator names are case-sensitive', { body: { ref: { $startswith: 'x' } } }, [{ path: ['body', 'ref', '$startswith'], message: `unknown operator "$startswith"; the operators are ${OPERATORS}` }]],
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
  ['problems inside $or are found, with the branch index', { body: { $or: [{ a: 1 }, { a: { $gtt: 1 } }] } }, [{ path: ['body', '$or', 1, 'a', '$gtt'], message: `unknown operator "$gtt"; the operators are ${OPERATORS}` }]],
  ['problems inside $not are found', { topic: { $not: { $exist: 1 } } }, [{ path: ['topic', '$not', '$exist'], message: '$exist needs true or false' }]],
  ['problems inside a list are found', { body: { tags: ['a', { $in: 'b' }] } }, [{ path: ['body', 'tags', 1, '$in'], message: '$in needs a list of values' }]],
  // The operands of $eq, $neq and $contains are values, not filters: "$gtt" there is data.
  ['the operand of $eq is a value, not checked', { body: { a: { $eq: { $gtt: 1 } } } }, []],
  ['headers take an object of names', { headers: 'x-a' }, [{ path: ['headers'], message: 'headers takes an object of header names, e.g. {"x-shop-domain": "a.example"}' }]],
  ['header names differing only in case are one header', { headers: { 'X-A': '1', 'x-a': '2' } }, [{ path: ['headers', 'x-a'], message: '"x-a" is also given as "X-A"; header names match in any case' }]],
  ['every problem is listed at once, in order', { query: 1, body: { $gtt: 1, a: { $exist: 'no' } } }, [
    { path: ['query'], message: 'unknown key "query": a filter has body, headers and topic' },
    { path: ['body', '$gtt'], message: `unknown operator "$gtt"; the operators are ${OPERATORS}` },
    { path: ['body', 'a', '$exist'], message: '$exist needs true or false' },
  ]],
];

describe('filterProblems', () => {
  it.each(problemRows)('%s', (_why, filter, problems) => {
    expect(filterProblems(filter)).toEqual(problems);
  });
});
