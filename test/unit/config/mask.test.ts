import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.ts';
import { configMask, maskOf, secretValues } from '../../../src/config/mask.ts';

const TOKEN = 'crm-bearer-token-7c6b5a4d';
const KEY = 'custom-key-0f9e8d7c';
const LOOKUP_TOKEN = 'lookup-token-55aa66bb';
const config = parseConfig(
  JSON.stringify({
    alerts: { ops: { url: 'https://hooks.slack.com/services/T0001/B0002/slackpathsecret0123', format: 'slack', on: ['failed'] } },
    sources: {
      shop: {
        adapter: 'meta',
        secrets: ['meta-app-secret-01'],
        verifyToken: 'meta-verify-token-02',
        actions: {
          crm: {
            url: 'https://crm.example/v1/items?api_key=query-key-0123',
            headers: { Authorization: `Bearer ${TOKEN}`, 'X-Api-Key': KEY, Accept: 'v2' },
            lookup: { url: 'https://user:url-password-9@crm.example/find?id={key}', headers: { Authorization: `Basic ${Buffer.from(`robot:${LOOKUP_TOKEN}`).toString('base64')}` }, found: { n: 1 } },
          },
        },
      },
    },
  }),
  'test.json',
).config;

describe('the config mask', () => {
  const mask = configMask(config);

  it.each([
    ['a bearer header whole', `401 Unauthorized: got Bearer ${TOKEN}`, '401 Unauthorized: got [redacted]'],
    ['the token of a bearer header alone', `invalid token ${TOKEN}.`, 'invalid token [redacted].'],
    ['a custom header value', `{"error":"key ${KEY} revoked"}`, '{"error":"key [redacted] revoked"}'],
    ['a source secret and a verify token', 'meta-app-secret-01 / meta-verify-token-02', '[redacted] / [redacted]'],
    ["a URL's query value", 'no such key: query-key-0123', 'no such key: [redacted]'],
    ["a URL's password", 'user url-password-9 refused', 'user [redacted] refused'],
    ['Basic credentials decoded', `bad password ${LOOKUP_TOKEN} for robot:${LOOKUP_TOKEN}`, 'bad password [redacted] for [redacted]'],
    ["an alert URL's path", 'no_service: /services/T0001/B0002/slackpathsecret0123', 'no_service: [redacted]'],
    ['a value JSON-escaped', JSON.stringify({ echo: 'meta-app-secret-01' }), '{"echo":"[redacted]"}'],
    ['a value percent-encoded', `?t=${encodeURIComponent(`Bearer ${TOKEN}`)}`, '?t=[redacted]'],
    ['not a short value (v2), nor the scheme, nor a task ID', '400 Bad Request: Bearer scheme, api v2, t_0 and t_01J', '400 Bad Request: Bearer scheme, api v2, t_0 and t_01J'],
  ])('masks %s', (_, text, expected) => {
    expect(mask(text)).toBe(expected);
  });

  it('masks a value that holds another whole, not in part', () => {
    expect(maskOf(['abcdef', 'abcdefghij'])('xxabcdefghijxx')).toBe('xx[redacted]xx');
  });

  it('lists no value shorter than the masked length as something to look for', () => {
    expect(secretValues(config)).toContain('v2');
    expect(maskOf(['v2', 'abc'])('v2 abc')).toBe('v2 abc');
  });
});
