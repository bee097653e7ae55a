import { describe, expect, it } from 'vitest';
import { renderUrl, urlTemplateProblems, withKey, type UrlInput } from '../../../src/shape/url-template.ts';

const ORIGIN_PROBLEM = 'a placeholder before the path: the scheme, host and port are always written out, so no delivery can choose where the request goes';

const input: UrlInput = {
  eventId: 'evt 1',
  deliveryId: 'd-1',
  topic: 'orders/create',
  headers: { 'x-shop': 'acme', 'x-shop-token': '[redacted]' },
  body: { id: 1001, customer: { id: 7, email: 'a@b.example' }, note: 'a/b?c d#e&f=g', big: 2 ** 60, items: [], empty: '' },
  sent: () => ({ external: 'ext/1' }),
};

// Each row: the template, what it renders to (a URL) or the error that names the placeholder, and why.
const rendered: [string, string, { url: string } | { error: string }][] = [
  ['a field of the body in the path', 'https://x.example/c/{body:/customer/id}', { url: 'https://x.example/c/7' }],
  ['each value one path segment or query value', 'https://x.example/n/{body:/note}?q={body:/note}', { url: 'https://x.example/n/a%2Fb%3Fc%20d%23e%26f%3Dg?q=a%2Fb%3Fc%20d%23e%26f%3Dg' }],
  ['the identities and a header', 'https://x.example/{topic}/{eventId}?d={deliveryId}&s={header:X-Shop}', { url: 'https://x.example/orders%2Fcreate/evt%201?d=d-1&s=acme' }],
  ['a field of the body sent', 'https://x.example/e/{sent:/external}', { url: 'https://x.example/e/ext%2F1' }],
  ['{key} left for the sending task', 'https://x.example/t/{key}?id={body:/id}', { url: 'https://x.example/t/{key}?id=1001' }],
  ['a missing field', 'https://x.example/c/{body:/customer/phone}', { error: "the url's {body:/customer/phone} is missing: the delivery's body has nothing there" }],
  ['an empty string', 'https://x.example/c/{body:/empty}', { error: "the url's {body:/empty} is an empty string in the delivery's body" }],
  ['an object', 'https://x.example/c/{body:/customer}', { error: "the url's {body:/customer} is an object in the delivery's body, not a string or a number" }],
  ['a number past 2^53', 'https://x.example/c/{body:/big}', { error: "the url's {body:/big} is a number JSON cannot carry exactly in the delivery's body" }],
  ['a credential header', 'https://x.example/c/{header:x-shop-token}', { error: "the url's {header:x-shop-token} names a header holding a credential, which never goes into a URL" }],
  ['a header the delivery lacks', 'https://x.example/c/{header:x-other}', { error: "the url's {header:x-other} is empty or absent: this delivery has no such header" }],
];

describe('renderUrl', () => {
  for (const [why, template, expected] of rendered) it(why, () => expect(renderUrl(template, input)).toEqual(expected));

  it('fills {key} with the sending task\'s ID, encoded', () => {
    expect(withKey('https://x.example/t/{key}?id=1', 't_a/b')).toBe('https://x.example/t/t_a%2Fb?id=1');
  });
});

const checked: [string, string, string[]][] = [
  ['a literal url', 'https://x.example/tasks', []],
  ['placeholders in path and query', 'https://x.example:8443/c/{body:/id}?q={sent:/x}&k={key}', []],
  ['a query right after the host', 'https://x.example?id={body:/id}', []],
  ['a placeholder as the host', 'https://{body:/host}/c', [ORIGIN_PROBLEM]],
  ['a placeholder in the host', 'https://api.{topic}.example/c', [ORIGIN_PROBLEM]],
  ['a placeholder right after the host', 'https://x.example{body:/path}', [ORIGIN_PROBLEM]],
  ['a placeholder as the port', 'https://x.example:{body:/port}/c', [ORIGIN_PROBLEM]],
  ['a placeholder in the user info', 'https://{header:x-user}@x.example/c', [ORIGIN_PROBLEM]],
  ['an unknown placeholder', 'https://x.example/{eventID}', ['{eventID}: not a placeholder; use {eventId}, {deliveryId}, {topic}, {key}, {header:NAME}, {body:/pointer} or {sent:/pointer}']],
  ['a pointer without its slash', 'https://x.example/{body:id}', ['{body:id}: not a JSON pointer like {body:/order/id}']],
  ['not http(s)', 'ftp://x.example/{key}', ['not an http(s) URL once its placeholders are filled in']],
];

describe('urlTemplateProblems', () => {
  for (const [why, template, expected] of checked) it(why, () => expect(urlTemplateProblems(template)).toEqual(expected));
});
