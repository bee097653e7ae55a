import { describe, expect, it, vi } from 'vitest';
import { apiRoutes } from '../../../src/api/routes.ts';
import { SignInThrottle } from '../../../src/api/sign-in-throttle.ts';
import { AdminTokens } from '../../../src/api/tokens.ts';
import { capture } from '../../support/log-lines.ts';
import { streaming, watchedBody } from '../../support/watched-body.ts';

const RIGHT = 'alice-right-token-0123456789';
const tokens = new AdminTokens({ alice: RIGHT });

describe('SignInThrottle', () => {
  const limits = { perAddress: { burst: 2, everyMs: 1000 }, overall: { burst: 3, everyMs: 1000 } };
  const setup = () => {
    let now = 0;
    const { logger, lines } = capture('warn');
    const throttle = new SignInThrottle(logger, limits, () => now);
    const verify = vi.fn((token: string) => tokens.labelOf(token));
    const attempt = (address: string, token: string) => throttle.judge(address, '/api/tasks', () => verify(token));
    return { attempt, verify, lines, advance: (ms: number) => (now += ms) };
  };

  it('stops judging an address once its wrong tokens used its budget, right ones included, until it refills', () => {
    const { attempt, verify, advance } = setup();
    expect(attempt('10.0.0.1', 'guess1')).toEqual({ wrong: true });
    expect(attempt('10.0.0.1', 'guess2')).toEqual({ wrong: true });
    verify.mockClear();
    expect(attempt('10.0.0.1', RIGHT)).toEqual({ retryAfterSeconds: 1 });
    expect(verify).not.toHaveBeenCalled();
    advance(1000);
    expect(attempt('10.0.0.1', RIGHT)).toEqual({ label: 'alice' });
  });

  it('limits wrong tokens from every address together, and lets right ones cost nothing', () => {
    const { attempt, advance } = setup();
    for (let i = 0; i < 20; i++) expect(attempt('10.0.0.9', RIGHT)).toEqual({ label: 'alice' });
    for (const address of ['10.0.0.1', '10.0.0.2', '10.0.0.3']) expect(attempt(address, 'guess')).toEqual({ wrong: true });
    expect(attempt('10.0.0.4', 'guess')).toEqual({ retryAfterSeconds: 1 });
    expect(attempt('10.0.0.9', RIGHT)).toEqual({ retryAfterSeconds: 1 });
    advance(1000);
    expect(attempt('10.0.0.4', 'guess')).toEqual({ wrong: true });
  });

  it('logs each wrong token as a warning with the address, and when the throttle starts, never the token', () => {
    const { attempt, lines } = setup();
    attempt('10.0.0.1', 'guess-one');
    attempt('10.0.0.1', 'guess-two');
    attempt('10.0.0.1', 'guess-three');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ level: 40, address: '10.0.0.1', path: '/api/tasks', msg: 'sign-in refused: not an admin token' });
    expect(lines[0]!.throttledSeconds).toBeUndefined();
    expect(lines[1]).toMatchObject({ throttledSeconds: 1 });
    expect(JSON.stringify(lines)).not.toMatch(/guess/);
  });
});

describe('the admin API', () => {
  const config = { sources: {}, limits: { writeStallMs: 30_000 } } as never;
  const api = () => apiRoutes({ store: {} as never, config, tokens, stats: {} as never, throttle: new SignInThrottle(capture('silent').logger), transforms: {} as never });
  const as = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });
  it('answers 429 with Retry-After once wrong tokens used their budget, to the right token too', async () => {
    const app = api();
    for (let i = 0; i < 10; i++) expect((await app.request('/api/stats', { headers: as(`guess-${i}`) })).status).toBe(401);
    for (const token of ['guess-10', RIGHT]) {
      const answer = await app.request('/api/stats', { headers: as(token) });
      expect(answer.status).toBe(429);
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await answer.json()).error).toMatchObject({ code: 'too_many_failed_sign_ins', message: expect.stringMatching(/try again in \d+ s/) });
    }
    // No token at all is no guess: still a 401 that says what is needed.
    expect((await app.request('/api/stats')).status).toBe(401);
  });

  it('refuses a body past 1 MiB with 413 in the API error shape, and reads no body without a right token', async () => {
    const app = api();
    const declared = await app.request('/api/tasks/t_1/approve', {
      method: 'POST',
      headers: { ...as(RIGHT), 'content-type': 'application/json', 'content-length': String(2 * 1024 * 1024) },
      body: 'x'.repeat(2 * 1024 * 1024),
    });
    expect(declared.status).toBe(413);
    expect(await declared.json()).toEqual({ error: { code: 'body_too_large', message: expect.stringMatching(/limit of 1048576 bytes/) } });

    const chunked = await app.request('/api/tasks/t_1/approve', streaming({ method: 'POST', headers: as(RIGHT), body: watchedBody().body }));
    expect(chunked.status).toBe(413);

    const stranger = watchedBody();
    const refused = await app.request('/api/tasks/t_1/approve', streaming({ method: 'POST', headers: as('guess'), body: stranger.body }));
    expect(refused.status).toBe(401);
    expect(stranger.seen.read).toBe(false);
  });
});
