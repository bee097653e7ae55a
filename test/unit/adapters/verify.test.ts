import { describe, expect, it } from 'vitest';
import {
  checkMillisecondsTimestamp,
  checkTimestamp,
  header,
  isoDate,
  jsonPointer,
  MAX_JSON_DEPTH,
  optionalString,
  parseJsonText,
  requireId,
  safeEqual,
  tokenMatches,
  unixMillisecondsDate,
  unixSecondsDate,
} from '../../../adapters/verify.ts';
import { InputError, SignatureError } from '../../../src/errors.ts';

describe('safeEqual', () => {
  it('compares without throwing when the lengths differ', () => {
    expect(safeEqual('abc', 'abc')).toBe(true);
    expect(safeEqual('abc', 'abd')).toBe(false);
    expect(safeEqual('abc', 'abcd')).toBe(false);
    expect(safeEqual('', 'a')).toBe(false);
  });
});

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

describe('checkTimestamp', () => {
  const now = new Date(1_700_000_000_000);

  it('accepts the edges of the window and refuses beyond them in both directions', () => {
    expect(checkTimestamp('1699999700', now, 300, 'ts')).toBe(1_699_999_700);
    expect(checkTimestamp('1700000300', now, 300, 'ts')).toBe(1_700_000_300);
    expect(() => checkTimestamp('1699999699', now, 300, 'ts')).toThrow(SignatureError);
    expect(() => checkTimestamp('1700000301', now, 300, 'ts')).toThrow(SignatureError);
  });

  it('takes a separate window ahead, for a sender whose retries keep their first timestamp', () => {
    expect(checkTimestamp('1699994600', now, 5400, 'ts', 300)).toBe(1_699_994_600);
    expect(checkTimestamp('1700000300', now, 5400, 'ts', 300)).toBe(1_700_000_300);
    expect(() => checkTimestamp('1699994599', now, 5400, 'ts', 300)).toThrow(/5401 s old, more than the 5400 s allowed/);
    expect(() => checkTimestamp('1700000301', now, 5400, 'ts', 300)).toThrow(/301 s in the future, more than the 300 s allowed/);
  });

  it('refuses values that are not unix seconds', () => {
    for (const value of ['', '-1', '1.5e9', '1700000000.5', ' 1700000000', '0x65', '9'.repeat(400)]) {
      expect(() => checkTimestamp(value, now, 300, 'ts')).toThrow(SignatureError);
    }
  });
});

describe('checkMillisecondsTimestamp', () => {
  const now = new Date(1_700_000_000_000);

  it('accepts the edges of the window, to the millisecond, and refuses beyond them in both directions', () => {
    expect(() => checkMillisecondsTimestamp(1_699_999_700_000, now, 300, 'ts')).not.toThrow();
    expect(() => checkMillisecondsTimestamp(1_700_000_300_000, now, 300, 'ts')).not.toThrow();
    expect(() => checkMillisecondsTimestamp(1_699_999_699_999, now, 300, 'ts')).toThrow(/ts is 301 s old/);
    expect(() => checkMillisecondsTimestamp(1_700_000_300_001, now, 300, 'ts')).toThrow(/ts is 301 s in the future/);
  });

  it('says a timestamp in seconds is one', () => {
    expect(() => checkMillisecondsTimestamp(1_700_000_000, now, 300, 'ts')).toThrow(/ts is 1700000000, which is unix seconds/);
  });
});

describe('tokenMatches', () => {
  it('finds the token among the secrets, and nothing that merely begins or ends like one', () => {
    expect(tokenMatches('b-token', ['a-token', 'b-token'])).toBe(true);
    for (const other of ['b-toke', 'b-tokens', '', 'B-TOKEN']) expect(tokenMatches(other, ['a-token', 'b-token'])).toBe(false);
  });
});

describe('header', () => {
  it('returns the first name present, in any case', () => {
    const headers = new Headers({ 'Shopify-Topic': 'new', 'x-other': '1' });
    expect(header(headers, 'x-shopify-topic', 'SHOPIFY-TOPIC')).toBe('new');
    expect(header(headers, 'absent')).toBeNull();
  });
});

describe('requireId', () => {
  it('trims, and refuses blank or overlong IDs', () => {
    expect(requireId('  id-1 ', 'id')).toBe('id-1');
    expect(requireId('x'.repeat(255), 'id')).toHaveLength(255);
    expect(() => requireId('x'.repeat(256), 'id')).toThrow(InputError);
    expect(() => requireId(' ', 'id')).toThrow(InputError);
    expect(() => requireId(null, 'id')).toThrow(InputError);
  });

  it('refuses what PostgreSQL cannot store, naming it: a NUL, a lone surrogate; a pair is text', () => {
    expect(() => requireId('evt\u0000', 'event id')).toThrow(/event id contains a NUL/);
    expect(() => requireId('evt_\ud800', 'event id')).toThrow(/lone UTF-16 surrogate/);
    expect(() => requireId('\udc00evt', 'event id')).toThrow(InputError);
    expect(requireId('evt_\ud83d\ude00', 'event id')).toBe('evt_😀');
  });
});

describe('optional fields a delivery cannot be refused over', () => {
  it('a topic PostgreSQL cannot store is none', () => {
    expect(optionalString('orders/create')).toBe('orders/create');
    expect(optionalString('x\ud800')).toBeNull();
    expect(optionalString('x\u0000')).toBeNull();
  });

  it('a time outside years 1 to 9999 is none', () => {
    expect(isoDate('0000-01-01T00:00:00Z')).toBeNull();
    expect(isoDate('0001-01-01T00:00:00Z')?.toISOString()).toBe('0001-01-01T00:00:00.000Z');
    expect(isoDate('9999-12-31T23:59:59Z')?.toISOString()).toBe('9999-12-31T23:59:59.000Z');
    expect(unixSecondsDate(253402300799)?.toISOString()).toBe('9999-12-31T23:59:59.000Z');
    expect(unixSecondsDate(253402300800)).toBeNull();
    expect(unixMillisecondsDate(1654503849680)?.toISOString()).toBe('2022-06-06T08:24:09.680Z');
    expect(unixMillisecondsDate(253402300800000)).toBeNull();
    for (const unreadable of ['1654503849680', -1, 1.5, undefined]) expect(unixMillisecondsDate(unreadable)).toBeNull();
  });
});

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
