import { DrizzleQueryError } from 'drizzle-orm/errors';
import { describe, expect, it } from 'vitest';
import { HttpError } from '../../../src/errors.ts';
import { withinBudget } from '../../../src/ingest/budget.ts';
import { createLogger } from '../../../src/log.ts';
import { outageLog } from '../../../src/outage-log.ts';
import { capture } from '../../support/log-lines.ts';

const logger = createLogger('silent');
const messages = { level: 'error', failing: 'recording a delivery failed', recovered: 'deliveries are recorded again', repeatEveryMs: 0 } as const;
const failedWith = (code: string, message: string) =>
  Promise.reject(new DrizzleQueryError('select oncehook_record_deliveries($1::json, $2)', ['{"body":"Qk9EWQ=="}'], Object.assign(new Error(message), { code })));

async function answer(work: Promise<unknown>): Promise<HttpError> {
  const error = await withinBudget(work, performance.now() + 1000, logger, outageLog(logger, messages)).catch((e: unknown) => e);
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

  // While the database is down every delivery fails alike: a stack for each buried the first under the same lines.
  it('logs the first failure of an outage with its stack and the database\'s words, each repeat in one line, the recovery once', async () => {
    const { logger: captured, lines } = capture();
    const outage = outageLog(captured, messages);
    const write = (work: Promise<unknown>) => withinBudget(work, performance.now() + 1000, captured, outage).catch(() => {});
    for (let i = 0; i < 5; i++) await write(failedWith('57P01', 'terminating connection due to administrator command'));
    await write(Promise.resolve({ decision: 'accepted' }));
    await write(Promise.resolve({ decision: 'accepted' }));

    expect(lines.map((line) => line.msg)).toEqual([...Array(5).fill(messages.failing), messages.recovered]);
    expect(lines.filter((line) => line.err?.stack)).toEqual([lines[0]]);
    expect(lines.slice(1, 5)).toEqual(
      [2, 3, 4, 5].map((failures) => expect.objectContaining({ failures, error: 'terminating connection due to administrator command' })),
    );
    expect(JSON.stringify(lines)).not.toContain('Qk9EWQ==');
  });

  it('says repeats at most once a repeatEveryMs with the count so far, however fast deliveries fail', async () => {
    const { logger: captured, lines } = capture();
    const outage = outageLog(captured, { ...messages, repeatEveryMs: 150 });
    const write = (work: Promise<unknown>) => withinBudget(work, performance.now() + 1000, captured, outage).catch(() => {});
    for (let i = 0; i < 40; i++) await write(failedWith('57P01', 'terminating connection due to administrator command'));
    await new Promise((resolve) => setTimeout(resolve, 200));
    await write(failedWith('57P01', 'terminating connection due to administrator command'));
    expect(lines.map((line) => line.failures)).toEqual([undefined, 41]);
  });

  // A stalled database answers nothing until after the sender's budget: those deliveries are the outage's too.
  it('counts a write that fails after its 503 as one of the outage, without its stack', async () => {
    const { logger: captured, lines } = capture();
    const outage = outageLog(captured, messages);
    const failLate = () => new Promise((_, reject) => setTimeout(() => reject(new Error('connect ETIMEDOUT 10.0.0.9:5432')), 30));
    for (let i = 0; i < 3; i++) {
      const error = await withinBudget(failLate(), performance.now() + 5, captured, outage).catch((e: unknown) => e);
      expect((error as HttpError).code).toBe('store_timeout');
    }
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(lines.filter((line) => line.err?.stack)).toHaveLength(1);
    expect(lines.map((line) => line.failures)).toEqual([undefined, 2, 3]);
  });
});
