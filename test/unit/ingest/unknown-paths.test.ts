import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { UnknownPathLog } from '../../../src/ingest/unknown-paths.ts';
import { capture } from '../../support/log-lines.ts';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

/** The log's lines once pino has written them (it writes asynchronously). */
async function linesOf(log: ReturnType<typeof capture>) {
  log.logger.flush();
  await vi.advanceTimersByTimeAsync(0);
  return log.lines.map(({ msg, path, count }) => ({ msg, path, count }));
}

describe('requests to an ingress path that names no source', () => {
  it('are logged at once, then once a minute per path with how many more came, never a line per request', async () => {
    const log = capture();
    const unknown = new UnknownPathLog(log.logger);
    for (let i = 0; i < 1000; i++) unknown.note('POST', '/in/shop-old');
    unknown.note('POST', '/in/');
    expect(await linesOf(log)).toEqual([
      { msg: 'POST /in/shop-old: no such source is configured, answered 404 — is a sender pointed at a wrong URL?', path: '/in/shop-old', count: undefined },
      { msg: 'POST /in/: no such source is configured, answered 404 — is a sender pointed at a wrong URL?', path: '/in/', count: undefined },
    ]);

    await vi.advanceTimersByTimeAsync(60_000);
    for (let i = 0; i < 5; i++) unknown.note('POST', '/in/shop-old');
    await vi.advanceTimersByTimeAsync(60_000);
    await vi.advanceTimersByTimeAsync(60_000);
    expect((await linesOf(log)).slice(2)).toEqual([
      { msg: '/in/shop-old: 999 more requests for no configured source in the last minute, answered 404', path: '/in/shop-old', count: 999 },
      { msg: '/in/shop-old: 5 more requests for no configured source in the last minute, answered 404', path: '/in/shop-old', count: 5 },
    ]);
    // Quiet for a minute: the next request is news again, and said at once.
    unknown.note('POST', '/in/shop-old');
    expect(await linesOf(log)).toHaveLength(5);
  });

  it('name at most twenty paths a minute and sum the rest, so random paths cannot fill the disk either', async () => {
    const log = capture();
    const unknown = new UnknownPathLog(log.logger);
    for (let i = 0; i < 5000; i++) unknown.note('POST', `/in/${i}`);
    await vi.advanceTimersByTimeAsync(60_000);
    const lines = await linesOf(log);
    expect(lines).toHaveLength(21);
    expect(lines[20]).toMatchObject({ count: 4980 });
    expect(lines[20]!.msg).toMatch(/^4980 requests to further unknown ingress paths in the last minute/);
  });

  it('shortens a long path', async () => {
    const log = capture();
    new UnknownPathLog(log.logger).note('POST', `/in/${'x'.repeat(10_000)}`);
    expect((await linesOf(log))[0]!.path).toHaveLength(201);
  });
});
