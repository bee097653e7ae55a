import { DrizzleQueryError } from 'drizzle-orm/errors';
import { describe, expect, it } from 'vitest';
import { capture } from '../support/log-lines.ts';

describe('logged errors', () => {
  it("keep a failed statement and the database's error, never the statement's parameters (bodies, headers)", () => {
    const { logger, lines } = capture();
    const database = Object.assign(new Error('date/time field value out of range: "0000-01-01T00:00:00Z"'), { code: '22008' });
    const failed = new DrizzleQueryError('select oncehook_record_deliveries($1::json, $2)', ['{"body":"Qk9EWS1NQVJLRVI="}', 'oncehook_tasks'], database);
    logger.error({ err: failed }, 'recording a delivery failed');
    expect(lines).toHaveLength(1);
    const text = JSON.stringify(lines[0]);
    expect(text).not.toContain('Qk9EWS1NQVJLRVI=');
    expect(text).not.toContain('params');
    expect(lines[0]!.err.message).toContain('select oncehook_record_deliveries($1::json, $2)');
    expect(lines[0]!.err.message).toContain('date/time field value out of range');
    expect(lines[0]!.err.stack).toContain('caused by');
  });

  it('other errors are logged whole', () => {
    const { logger, lines } = capture();
    logger.error({ err: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }) }, 'down');
    expect(lines[0]!.err).toMatchObject({ message: 'connect ECONNREFUSED 127.0.0.1:5432', code: 'ECONNREFUSED' });
  });
});

describe('redaction', () => {
  it('hides credentials that reach a log call by mistake, and leaves the rest as it was', () => {
    const { logger, lines } = capture();
    const error = Object.assign(new Error('refused'), { secrets: ['s3cret-err'], code: 'E1' });
    logger.info(
      {
        headers: { authorization: 'Bearer t0ken-h', cookie: 'c00kie', secrets: 's3cret-h', accept: 'json' },
        source: { adapter: 'shopify', secrets: ['s3cret-1'], actions: { crm: {} } },
        secrets: ['s3cret-2'],
        token: 't0ken-2',
        adminToken: 't0ken-3',
        nested: { deeper: { secrets: 'kept: only one level down is redacted' } },
        err: error,
        task: 't_1',
        attempt: 2,
      },
      'line',
    );
    logger.warn({ err: error }, 'alone');
    const text = JSON.stringify(lines);
    for (const secret of ['t0ken-h', 'c00kie', 's3cret-h', 's3cret-1', 's3cret-2', 't0ken-2', 't0ken-3', 's3cret-err']) expect(text).not.toContain(secret);
    expect(lines[0]).toMatchObject({
      headers: { authorization: '[redacted]', cookie: '[redacted]', secrets: '[redacted]', accept: 'json' },
      source: { adapter: 'shopify', secrets: '[redacted]', actions: { crm: {} } },
      secrets: '[redacted]',
      token: '[redacted]',
      adminToken: '[redacted]',
      nested: { deeper: { secrets: 'kept: only one level down is redacted' } },
      err: { message: 'refused', code: 'E1', secrets: '[redacted]' },
      task: 't_1',
      attempt: 2,
      msg: 'line',
    });
    expect(Object.keys(lines[0]!.source)).toEqual(['adapter', 'secrets', 'actions']);
    expect(lines[1]!.err).toMatchObject({ message: 'refused', code: 'E1', secrets: '[redacted]' });
    expect(lines[1]!.err.stack).toContain('refused');
    // The caller's objects are not changed.
    expect(error.secrets).toEqual(['s3cret-err']);
  });
});
