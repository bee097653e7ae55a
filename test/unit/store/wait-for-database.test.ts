import { describe, expect, it } from 'vitest';
import { reasonOf, waitForDatabase, worthWaiting } from '../../../src/store/wait-for-database.ts';

const failing = (code: string, message = 'failed') => Object.assign(new Error(message), { code });
const quiet = { warn: () => {} };

describe('waiting for the database at start-up', () => {
  it('waits for a database that is away, not for one set up wrong', () => {
    for (const code of ['ECONNREFUSED', 'CONNECT_TIMEOUT', 'ENOTFOUND', '57P03', '57P01', 'CONNECTION_CLOSED', 'TARGET_SESSION_ATTRS_UNMET']) {
      expect(worthWaiting(failing(code)), code).toBe(true);
    }
    // A wrong password, a user or database that does not exist, a URL that is not one, a server refusing TLS.
    for (const code of ['28P01', '28000', '3D000', 'ERR_INVALID_URL', '42P01']) expect(worthWaiting(failing(code)), code).toBe(false);
    expect(worthWaiting(failing('ECONNRESET', 'the server does not support TLS'))).toBe(false);
    expect(worthWaiting(new Error('no code'))).toBe(false);
  });

  it('names what a try met by its code, through drizzle\'s wrapping', () => {
    expect(reasonOf(new Error('wrapped', { cause: failing('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.1:5432') }))).toBe('connection refused');
    expect(reasonOf(failing('57P03'))).toBe('the server is not accepting connections yet');
    expect(reasonOf(failing('XX000'))).toBe('XX000');
  });

  it('tries again with growing pauses until it succeeds, telling each failure', async () => {
    const told: string[] = [];
    const logged: number[] = [];
    let tries = 0;
    const result = await waitForDatabase(
      async () => {
        if (++tries < 3) throw failing('ECONNREFUSED');
        return 'open';
      },
      { waitMs: 10_000, logger: { warn: (fields: { retryInMs: number }) => logged.push(fields.retryInMs) }, onWaiting: (w) => told.push(`${w.tries} ${w.reason}`) },
    );
    expect(result).toBe('open');
    expect(told).toEqual(['1 connection refused', '2 connection refused']);
    expect(logged).toEqual([250, 500]);
  });

  it('fails at once on a failure no wait mends, or with no wait at all', async () => {
    let tries = 0;
    const attempt = async () => {
      tries++;
      throw failing('3D000');
    };
    await expect(waitForDatabase(attempt, { waitMs: 10_000, logger: quiet })).rejects.toMatchObject({ code: '3D000' });
    const refused = waitForDatabase(async () => {
      tries++;
      throw failing('ECONNREFUSED');
    }, { waitMs: 0, logger: quiet });
    await expect(refused).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    await expect(refused).rejects.not.toHaveProperty('waitedMs');
    expect(tries).toBe(2);
  });

  it('gives up once the wait is spent, saying how long it waited', async () => {
    const started = performance.now();
    const error = await waitForDatabase(() => Promise.reject(failing('ECONNREFUSED')), { waitMs: 600, logger: quiet }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'ECONNREFUSED' });
    expect((error as { waitedMs: number }).waitedMs).toBeGreaterThanOrEqual(600);
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it('ends the wait when aborted', async () => {
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 50);
    const started = performance.now();
    await expect(waitForDatabase(() => Promise.reject(failing('ECONNREFUSED')), { waitMs: 60_000, logger: quiet, signal: abort.signal })).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    });
    expect(performance.now() - started).toBeLessThan(5000);
  });
});
