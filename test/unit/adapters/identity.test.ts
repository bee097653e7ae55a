import { describe, expect, it } from 'vitest';
import { isoDate, optionalString, requireId, unixMillisecondsDate, unixSecondsDate } from '../../../adapters/identity.ts';
import { InputError } from '../../../src/errors.ts';

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
