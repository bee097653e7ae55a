import { describe, expect, it } from 'vitest';
import { bodyPathPredicate } from '../../../src/shape/filter-index.ts';

// Each row: a body filter, the jsonpath predicate the content search asks the index with (null: none), and why.
const CASES: [unknown, string | null, string][] = [
  [{ id: 'A-1' }, '$."id" == "A-1"', 'a literal is an equality at its path'],
  [{ id: 1001 }, '$."id" == 1001 || $."id" == "1001" || $."id" == "1001.0" || $."id" == "1001.00" || $."id" == "1001.000" || $."id" == "1001.0000"', 'a number finds the decimal strings it is written as'],
  [{ price: 99.5 }, '$."price" == 99.5 || $."price" == "99.5" || $."price" == "99.50" || $."price" == "99.500" || $."price" == "99.5000"', 'decimals past those it has'],
  [{ customer: { email: 'a@b.example', vip: true } }, '($."customer"."email" == "a@b.example") && ($."customer"."vip" == true)', 'nested fields, all of them'],
  [{ id: { $eq: null } }, '$."id" == null', '$eq with a literal'],
  [{ status: { $in: ['paid', 'refunded'] } }, '($."status" == "paid") || ($."status" == "refunded")', '$in of literals'],
  [{ tags: ['a', 'b'] }, '($."tags" == "a") && ($."tags" == "b")', 'a list needs each entry'],
  [{ id: { $gt: 5 }, shop: 'x' }, '$."shop" == "x"', 'what does not translate is left to the check of each candidate'],
  [{ $or: [{ a: 1 }, { b: { $startsWith: 'x' } }] }, null, 'an $or with a branch that does not translate narrows nothing'],
  [{ 'we"ird': 'v' }, '$."we\\"ird" == "v"', 'a field name is quoted'],
  [{ id: { $not: 5 } }, null, 'nothing translates'],
];

describe('bodyPathPredicate', () => {
  for (const [m, predicate, why] of CASES) {
    it(why, () => expect(bodyPathPredicate(m)).toBe(predicate));
  }
});
