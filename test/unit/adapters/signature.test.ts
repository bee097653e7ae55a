import { describe, expect, it } from 'vitest';
import { checkMillisecondsTimestamp, checkTimestamp, header, safeEqual, tokenMatches } from '../../../adapters/signature.ts';
import { SignatureError } from '../../../src/errors.ts';

describe('safeEqual', () => {
  it('compares without throwing when the lengths differ', () => {
    expect(safeEqual('abc', 'abc')).toBe(true);
    expect(safeEqual('abc', 'abd')).toBe(false);
    expect(safeEqual('abc', 'abcd')).toBe(false);
    expect(safeEqual('', 'a')).toBe(false);
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
