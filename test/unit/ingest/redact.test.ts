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

  it('replaces any header named like a credential, whatever the sender calls it, and keeps the rest', () => {
    const credentials = [
      'x-gitlab-token', 'x-auth-token', 'x-shopify-access-token', 'x-client-secret', 'x-webhook-password', 'x-session-id',
      'x-amz-security-token', 'x-credentials', 'x-apikey', 'api_key', 'x-access-key', 'x-private-key', 'proxy-authorization', 'x-authorization',
    ];
    const kept = redact(Object.fromEntries([...credentials, 'x-gitlab-event', 'idempotency-key', 'x-shopify-webhook-id', 'user-agent'].map((name) => [name, 'value'])));
    for (const name of credentials) expect(kept[name], name).toBe('[redacted]');
    expect(kept).toMatchObject({ 'x-gitlab-event': 'value', 'idempotency-key': 'value', 'x-shopify-webhook-id': 'value', 'user-agent': 'value' });
  });

  it('joins a repeated header as the verifier reads it, and shortens a long value', () => {
    const kept = redact({ 'set-cookie': ['a=1', 'b=2'], via: 'x'.repeat(2000), absent: undefined });
    expect(kept['set-cookie']).toBe('a=1, b=2');
    expect(kept.via).toHaveLength(1025);
    expect(kept.via!.endsWith('…')).toBe(true);
    expect('absent' in kept).toBe(false);
  });
});
