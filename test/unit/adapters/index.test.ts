import { describe, expect, it } from 'vitest';
import { createAdapter } from '../../../adapters/index.ts';
import { ADAPTER_NAMES } from '../../../adapters/types.ts';
import { GENERIC_OPTIONS, STANDARD_SECRET } from './fixtures.ts';

describe('createAdapter', () => {
  it.each(ADAPTER_NAMES)('builds the %s adapter', (name) => {
    const hmac = name === 'generic-hmac' ? GENERIC_OPTIONS : undefined;
    expect(createAdapter({ adapter: name, secrets: [STANDARD_SECRET], hmac }).name).toBe(name);
  });

  it('refuses generic-hmac without its options', () => {
    expect(() => createAdapter({ adapter: 'generic-hmac', secrets: ['s'] })).toThrow(/hmac/);
  });
});
