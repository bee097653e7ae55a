import { describe, expect, it } from 'vitest';
import { headerRedactor } from '../../../src/ingest/redact.ts';

describe('headerRedactor', () => {
  const redact = headerRedactor(['x-shopify-hmac-sha256']);

  it('replaces the adapter’s signature headers, credentials and anything named like a signature', () => {
    const kept = redact({
      'x-shopify-hmac-sha256': 'c2lnbmF0dXJl',
      authorization: 'Bearer secret',
      cookie: 'session=secret',
      'x-api-key': 'secret',
      'x-other-signature': 'sig',
      'x-hub-hmac': 'mac',
      'x-shopify-topic': 'orders/create',
    });
    expect(kept).toEqual({
      'x-shopify-hmac-sha256': '[redacted]',
      authorization: '[redacted]',
      cookie: '[redacted]',
      'x-api-key': '[redacted]',
      'x-other-signature': '[redacted]',
      'x-hub-hmac': '[redacted]',
      'x-shopify-topic': 'orders/create',
    });
  });

  it('joins a repeated header as the verifier reads it, and shortens a long value', () => {
    const kept = redact({ 'set-cookie': ['a=1', 'b=2'], via: 'x'.repeat(2000), absent: undefined });
    expect(kept['set-cookie']).toBe('a=1, b=2');
    expect(kept.via).toHaveLength(1025);
    expect(kept.via!.endsWith('…')).toBe(true);
    expect('absent' in kept).toBe(false);
  });
});
