import { describe, expect, it } from 'vitest';
import { jsonPointer } from '../../src/json-pointer.ts';

describe('jsonPointer (RFC 6901)', () => {
  // The examples of RFC 6901 section 5.
  const doc = { foo: ['bar', 'baz'], '': 0, 'a/b': 1, 'c%d': 2, 'e^f': 3, 'g|h': 4, 'i\\j': 5, 'k"l': 6, ' ': 7, 'm~n': 8 };

  it.each([
    ['', doc],
    ['/foo', ['bar', 'baz']],
    ['/foo/0', 'bar'],
    ['/', 0],
    ['/a~1b', 1],
    ['/c%d', 2],
    ['/e^f', 3],
    ['/g|h', 4],
    ['/i\\j', 5],
    ['/k"l', 6],
    ['/ ', 7],
    ['/m~0n', 8],
  ])('resolves %j', (pointer, value) => {
    expect(jsonPointer(doc, pointer)).toEqual(value);
  });

  it('decodes ~01 as "~1", not "/"', () => {
    expect(jsonPointer({ '~1': 'tilde-one', '/': 'slash' }, '/~01')).toBe('tilde-one');
  });

  it('finds nothing for missing keys, bad indexes, inherited properties and scalars', () => {
    for (const pointer of ['/nope', '/foo/2', '/foo/01', '/foo/-', '/constructor', '/foo/0/x', '/m~0n/x']) {
      expect(jsonPointer(doc, pointer)).toBeUndefined();
    }
  });
});
