import { DrizzleQueryError } from 'drizzle-orm/errors';
import { describe, expect, it } from 'vitest';
import { HttpError } from '../../../src/errors.ts';
import { withinBudget } from '../../../src/ingest/budget.ts';
import { createLogger } from '../../../src/log.ts';

const logger = createLogger('silent');
const failedWith = (code: string, message: string) =>
  Promise.reject(new DrizzleQueryError('select oncehook_record_deliveries($1::json, $2)', ['{"body":"Qk9EWQ=="}'], Object.assign(new Error(message), { code })));

async function answer(work: Promise<unknown>): Promise<HttpError> {
  const error = await withinBudget(work, performance.now() + 1000, logger).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(HttpError);
  return error as HttpError;
}

describe('withinBudget', () => {
  it('answers 400 for a value the database refuses — a retry would fail the same way — naming it, without the parameters', async () => {
    const error = await answer(failedWith('22008', 'date/time field value out of range: "0000-01-01T00:00:00Z"'));
    expect(error.status).toBe(400);
    expect(error.code).toBe('unstorable_delivery');
    expect(error.message).toContain('date/time field value out of range');
    expect(error.message).not.toContain('Qk9EWQ==');
  });

  it('answers 503 + Retry-After for a failure a retry may get past', async () => {
    const error = await answer(failedWith('57P01', 'terminating connection due to administrator command'));
    expect(error.status).toBe(503);
    expect(error.headers['retry-after']).toBe('5');
  });
});
