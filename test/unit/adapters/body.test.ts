import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, parseJsonText } from '../../../adapters/body.ts';
import { InputError } from '../../../src/errors.ts';

describe('JSON depth guard', () => {
  it(`refuses JSON nested deeper than ${MAX_JSON_DEPTH} levels, counting only structure outside strings`, () => {
    const deep = '['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1);
    expect(() => parseJsonText(deep)).toThrow(InputError);
    const atLimit = '['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH);
    expect(() => parseJsonText(atLimit)).not.toThrow();
    const bracketsInAString = JSON.stringify({ text: '[{'.repeat(500) + '\\"' });
    expect(parseJsonText(bracketsInAString)).toEqual(JSON.parse(bracketsInAString));
  });
});
