import { describe, expect, it } from 'vitest';
import { editDistance, nearest } from '../../src/nearest.ts';

const ACTION_KEYS = ['url', 'idempotency', 'lookup', 'topics', 'timeoutMs', 'maxAttempts', 'keyRetention', 'after', 'transform', 'filter', 'headers'];

// [why, word, known, expected]
const rows: [string, string, string[], string[]][] = [
  ['two neighbours swapped are one edit', 'transfrom', ACTION_KEYS, ['transform']],
  ['a letter left out', 'idempotncy', ACTION_KEYS, ['idempotency']],
  ['case is ignored', 'timeoutMS', ACTION_KEYS, ['timeoutMs']],
  ['a short word is allowed one edit', 'ur', ACTION_KEYS, ['url']],
  ['a short word is allowed no more', 'uxy', ACTION_KEYS, []],
  ['a third of the letters off', 'timeout', ACTION_KEYS, ['timeoutMs']],
  ['nothing near: no guess', 'retries', ACTION_KEYS, []],
  ['equally near: each of them', '$gtt', ['$eq', '$gt', '$gte', '$lt'], ['$gt', '$gte']],
  ['the nearest wins over the near', 'transfom', ['transforms', 'transform'], ['transform']],
  ['nothing known', 'url', [], []],
];

describe('nearest', () => {
  it.each(rows)('%s', (_why, word, known, expected) => {
    expect(nearest(word, known)).toEqual(expected);
  });

  it('counts edits as optimal string alignment does', () => {
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('abc', 'abc')).toBe(0);
    expect(editDistance('ca', 'ac')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('brust', 'burst')).toBe(1);
  });
});
