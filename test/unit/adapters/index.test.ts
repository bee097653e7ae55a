import { describe, expect, it } from 'vitest';
import { ADAPTER_NAMES, createAdapter } from '../../../adapters/index.ts';
import { sendgridSigner } from '../../support/signers.ts';
import { GENERIC_OPTIONS, STANDARD_SECRET } from './fixtures.ts';

describe('createAdapter', () => {
  it.each(ADAPTER_NAMES)('builds the %s adapter', (name) => {
    const hmac = name === 'generic-hmac' ? GENERIC_OPTIONS : undefined;
    // A sendgrid source's secret is SendGrid's public key, not a shared secret.
    const secret = name === 'sendgrid' ? sendgridSigner().key : STANDARD_SECRET;
    // A meta source answers Meta's GET check with its verifyToken, and senders that sign the URL they call need the
    // public one; the others ignore both.
    expect(createAdapter({ adapter: name, secrets: [secret], hmac, verifyToken: 'verify-token', publicUrl: 'https://hooks.example.com' }).name).toBe(name);
  });

  it('refuses meta without its verifyToken', () => {
    expect(() => createAdapter({ adapter: 'meta', secrets: ['s'] })).toThrow(/verifyToken/);
  });

  it.each(['twilio', 'square'] as const)('refuses %s without the publicUrl it signs', (adapter) => {
    expect(() => createAdapter({ adapter, secrets: ['s'] })).toThrow(/publicUrl/);
  });

  it('refuses generic-hmac without its options', () => {
    expect(() => createAdapter({ adapter: 'generic-hmac', secrets: ['s'] })).toThrow(/hmac/);
  });

  it('refuses hubspot without the publicUrl HubSpot signs', () => {
    expect(() => createAdapter({ adapter: 'hubspot', secrets: ['s'] })).toThrow(/publicUrl/);
  });
});
