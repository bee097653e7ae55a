import { describe, expect, it } from 'vitest';
import { maskOf } from '../../../src/config/mask.ts';
import { classifyLookup, classifySend } from '../../../src/forward/classify.ts';
import type { Exchange } from '../../../src/forward/exchange.ts';

const answer = (status: number, headers: Record<string, string> = {}, body = ''): Exchange => ({
  kind: 'answer',
  answer: { status, statusText: '', headers, body: Buffer.from(body) },
});
const failure = (written: boolean, timedOut = false): Exchange => ({
  kind: 'failure',
  written,
  timedOut,
  error: Object.assign(new Error('boom'), { code: 'ECONNRESET' }),
});

describe('classifySend: each kind of outcome has its own answer', () => {
  it.each([
    [200, 'success'],
    [201, 'success'],
    [408, 'retryable'],
    [409, 'retryable'],
    [425, 'retryable'],
    [429, 'retryable'],
    [503, 'retryable'],
    // Error answers that do not say the downstream did not act: reconciled, never resent blindly.
    [500, 'unknown'],
    [502, 'unknown'],
    [504, 'unknown'],
    [599, 'unknown'],
    [303, 'unknown'],
    [400, 'rejected'],
    [404, 'rejected'],
    [410, 'rejected'],
    [422, 'rejected'],
    [501, 'rejected'],
    [505, 'rejected'],
    [301, 'rejected'],
    [307, 'rejected'],
    [401, 'refused'],
    [403, 'refused'],
  ])('%i → %s', (status, expected) => {
    expect(classifySend(answer(status), undefined).class).toBe(expected);
  });

  it('cools the destination down on 429 and 503 only', () => {
    expect(classifySend(answer(429), undefined)).toMatchObject({ coolDown: true });
    expect(classifySend(answer(503), undefined)).toMatchObject({ coolDown: true });
    expect(classifySend(answer(408), undefined)).toMatchObject({ coolDown: false });
  });

  it('the reference: the JSON pointer, else Location, else the status line', () => {
    const created = answer(201, { location: '/tasks/9' }, '{"data":{"id":42}}');
    expect(classifySend(created, '/data/id')).toMatchObject({ reference: '42' });
    expect(classifySend(created, '/missing')).toMatchObject({ reference: '/tasks/9' });
    expect(classifySend(answer(204), undefined)).toMatchObject({ reference: '204' });
  });

  it('a failure before the request was written is not sent; after, the outcome is unknown', () => {
    expect(classifySend(failure(false), undefined).class).toBe('not_sent');
    expect(classifySend(failure(true), undefined)).toMatchObject({ class: 'unknown', error: expect.stringMatching(/connection lost/) });
    expect(classifySend(failure(true, true), undefined)).toMatchObject({ class: 'unknown', error: expect.stringMatching(/timed out/) });
  });
});

describe('classifyLookup: yes, no, or nothing known', () => {
  it('2xx found, 404 absent, anything else unanswered', () => {
    expect(classifyLookup(answer(200), undefined).class).toBe('lookup_found');
    expect(classifyLookup(answer(404), undefined).class).toBe('lookup_absent');
    expect(classifyLookup(answer(500), undefined).class).toBe('lookup_unanswered');
    expect(classifyLookup(answer(410), undefined).class).toBe('lookup_unanswered');
    expect(classifyLookup(failure(true, true), undefined).class).toBe('lookup_unanswered');
  });

  it("an HTML page is no verdict: a sign-in page answering 200, a web server's 404 page", () => {
    const html = { 'content-type': 'text/html; charset=utf-8' };
    expect(classifyLookup(answer(200, html, '<html>Sign in</html>'), undefined).class).toBe('lookup_unanswered');
    expect(classifyLookup(answer(404, html, '<pre>Cannot GET /sent</pre>'), undefined).class).toBe('lookup_unanswered');
    expect(classifyLookup(answer(404, { 'content-type': 'text/plain' }, 'Not Found'), undefined).class).toBe('lookup_absent');
    expect(classifyLookup(answer(200, { 'content-type': 'application/json' }, '{"id":1}'), undefined).class).toBe('lookup_found');
  });

  it("429 and 503 say the lookup's origin is overloaded, 401 and 403 that it refuses oncehook, whatever the body", () => {
    const html = { 'content-type': 'text/html' };
    expect(classifyLookup(answer(429, { 'retry-after': '7' }), undefined)).toMatchObject({
      class: 'lookup_unanswered',
      standing: { cooling: true, retryAfter: { delayMs: 7000 } },
    });
    expect(classifyLookup(answer(503, html, '<h1>Service Unavailable</h1>'), undefined)).toMatchObject({ standing: { cooling: true, retryAfter: null } });
    expect(classifyLookup(answer(401), undefined)).toMatchObject({ class: 'lookup_unanswered', standing: { cooling: false } });
    expect(classifyLookup(answer(403, html, '<html>Sign in</html>'), undefined)).toMatchObject({ standing: { cooling: false } });
    for (const status of [500, 502, 408, 409]) expect(classifyLookup(answer(status), undefined)).not.toHaveProperty('standing');
  });
});

describe('the texts of a verdict pass the mask', () => {
  const SECRET = 'echoed-secret-0123456789';
  const mask = maskOf([SECRET]);

  it('in the error, the status line included, and before the body is cut: no start of a secret stays', () => {
    // The secret straddles the 300 characters of body an error keeps.
    const body = `${'x'.repeat(290)}${SECRET}`;
    const sent = classifySend({ kind: 'answer', answer: { status: 401, statusText: `Bad ${SECRET}`, headers: {}, body: Buffer.from(body) } }, undefined, mask);
    expect(sent).toMatchObject({ class: 'refused', error: expect.stringContaining('[redacted]') });
    expect('error' in sent && sent.error).not.toMatch(/echoed-/);
    const looked = classifyLookup(answer(403, {}, SECRET), undefined, undefined, mask);
    expect(looked).toMatchObject({ error: '403: [redacted]' });
  });

  it("in a lookup's mismatch, and in a reference", () => {
    const json = { 'content-type': 'application/json' };
    expect(classifyLookup(answer(200, json, JSON.stringify({ n: SECRET })), undefined, { n: 'other' }, mask)).toMatchObject({ class: 'lookup_absent', error: expect.not.stringContaining(SECRET) });
    expect(classifySend(answer(201, { location: `/items?token=${SECRET}` }), undefined, mask)).toMatchObject({ reference: '/items?token=[redacted]' });
  });

  it('but the answer is read as it came: a found filter still matches its JSON', () => {
    const json = { 'content-type': 'application/json' };
    expect(classifyLookup(answer(200, json, JSON.stringify({ n: SECRET })), undefined, { n: SECRET }, mask)).toMatchObject({ class: 'lookup_found' });
  });
});
