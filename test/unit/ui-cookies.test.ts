import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { overHttps } from '../../src/ui/cookies.ts';

describe('overHttps: whether dashboard cookies carry Secure', () => {
  const app = new Hono().get('/', (c) => c.text(String(overHttps(c))));
  const secure = async (headers: Record<string, string>, url = 'http://gateway.internal/') => (await (await app.request(url, { headers })).text()) === 'true';

  it('follows the request itself, X-Forwarded-Proto, or the proxy\'s RFC 7239 Forwarded header', async () => {
    expect(await secure({}, 'https://ops.example/')).toBe(true);
    expect(await secure({})).toBe(false);
    expect(await secure({ 'x-forwarded-proto': 'https, http' })).toBe(true);
    expect(await secure({ forwarded: 'for=192.0.2.60;proto=https;by=203.0.113.43' })).toBe(true);
    expect(await secure({ forwarded: 'Proto="HTTPS"' })).toBe(true);
    expect(await secure({ forwarded: 'for=192.0.2.60; proto=https, for=10.0.0.1;proto=http' })).toBe(true);
    expect(await secure({ forwarded: 'for=192.0.2.60;proto=http' })).toBe(false);
    expect(await secure({ forwarded: 'for=192.0.2.60, proto=https' })).toBe(false);
    expect(await secure({ forwarded: 'for="proto=https"' })).toBe(false);
  });
});
