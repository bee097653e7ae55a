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
