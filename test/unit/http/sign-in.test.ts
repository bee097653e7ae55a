import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Agent, fetch } from 'undici';
import { describe, expect, it, vi } from 'vitest';
import { apiRoutes } from '../../../src/api/routes.ts';
import { addressKey, FAILED_SIGN_INS, MAX_ADDRESSES, SignInThrottle } from '../../../src/http/sign-in-throttle.ts';
import { AdminTokens } from '../../../src/http/tokens.ts';
import { capture } from '../../support/log-lines.ts';
import { streaming, watchedBody } from '../../support/watched-body.ts';

const RIGHT = 'alice-right-token-0123456789';
const tokens = new AdminTokens({ alice: RIGHT });

describe('SignInThrottle', () => {
  const limits = { perAddress: { burst: 2, everyMs: 1000 }, logged: { burst: 3, everyMs: 1000 } };
  const setup = () => {
    let now = 0;
    const { logger, lines } = capture('warn');
    const throttle = new SignInThrottle(logger, limits, () => now);
    const verify = vi.fn((token: string) => tokens.labelOf(token));
    const attempt = (address: string, token: string) => throttle.judge(address, '/api/tasks', () => verify(token));
    return { throttle, attempt, verify, lines, advance: (ms: number) => (now += ms) };
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

  it('never refuses an address for the wrong tokens of others: 120 from 12 addresses, then a right one from a 13th', () => {
    const { attempt } = setup();
    for (let i = 0; i < 120; i++) attempt(`10.0.0.${i % 12}`, `guess-${i}`);
    expect(attempt('10.0.0.11', RIGHT)).toEqual({ retryAfterSeconds: 1 });
    expect(attempt('10.0.0.13', RIGHT)).toEqual({ label: 'alice' });
    expect(attempt('10.0.0.14', 'guess')).toEqual({ wrong: true });
  });

  it('gives an IPv6 /64 one budget, and an IPv4-mapped address its IPv4 one', () => {
    const { attempt } = setup();
    attempt('2001:db8:1:2::1', 'guess');
    attempt('2001:db8:1:2:ffff::9', 'guess');
    expect(attempt('2001:0db8:0001:0002:abcd:0:0:1', RIGHT)).toEqual({ retryAfterSeconds: 1 });
    expect(attempt('2001:db8:1:3::1', RIGHT)).toEqual({ label: 'alice' });
    attempt('::ffff:10.0.0.7', 'guess');
    attempt('10.0.0.7', 'guess');
    expect(attempt('::ffff:10.0.0.7', RIGHT)).toEqual({ retryAfterSeconds: 1 });
    expect(attempt('::ffff:10.0.0.8', RIGHT)).toEqual({ label: 'alice' });
  });

  it.each([
    ['10.1.2.3', '10.1.2.3'],
    ['::ffff:10.1.2.3', '10.1.2.3'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['2001:db8::', '2001:db8:0:0::/64'],
    ['2001:DB8:0:0A::1', '2001:db8:0:a::/64'],
    ['::1:2:3:4:5:10.1.2.3', '0:1:2:3::/64'],
    ['unknown', 'unknown'],
  ])('keys %s as %s', (address, key) => {
    expect(addressKey(address)).toBe(key);
  });

  it('remembers at most MAX_ADDRESSES addresses, forgetting the one whose last wrong token is oldest', () => {
    const { throttle, attempt } = setup();
    attempt('192.0.2.1', 'guess');
    attempt('192.0.2.1', 'guess');
    for (let i = 0; i < MAX_ADDRESSES; i++) attempt(`a-${i}`, 'guess');
    expect(throttle.remembered).toBe(MAX_ADDRESSES);
    // Forgotten: a full budget again.
    expect(attempt('192.0.2.1', RIGHT)).toEqual({ label: 'alice' });
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

  it('bounds the log of wrong tokens from every address together, and counts what it left out', () => {
    const { attempt, lines, advance } = setup();
    for (let i = 0; i < 10; i++) attempt(`10.0.1.${i}`, 'guess');
    expect(lines).toHaveLength(3);
    advance(1000);
    attempt('10.0.2.1', 'guess');
    expect(lines).toHaveLength(4);
    expect(lines[3]).toMatchObject({ address: '10.0.2.1', unlogged: 7 });
  });
});

describe('the admin API', () => {
  const config = { sources: {}, limits: { writeStallMs: 30_000 } } as never;
  const api = () => apiRoutes({ store: {} as never, config, tokens, stats: {} as never, throttle: new SignInThrottle(capture('silent').logger), transforms: {} as never, configVersion: 'test' });
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

  it('over real sockets: after 120 wrong tokens from 12 addresses, a right one from a 13th is answered at once', async () => {
    // A clock that stands still: on a busy machine the 120 requests can take longer than a budget's refill.
    const throttle = new SignInThrottle(capture('silent').logger, FAILED_SIGN_INS, () => 0);
    const app = apiRoutes({ store: {} as never, config, tokens, stats: async () => ({}) as never, throttle, transforms: {} as never, configVersion: 'test' });
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server;
    await once(server, 'listening');
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/stats`;
    // Every 127.0.0.x is this machine's loopback: thirteen client addresses, each its own budget.
    const agents = Array.from({ length: 13 }, (_, i) => new Agent({ localAddress: `127.0.0.${i + 2}` }));
    const ask = async (agent: Agent, token: string) => (await fetch(url, { headers: as(token), dispatcher: agent })).status;
    try {
      const wrong = await Promise.all(Array.from({ length: 120 }, (_, i) => ask(agents[i % 12]!, `guess-${i}`)));
      expect(wrong.filter((status) => status === 401)).toHaveLength(120);
      expect(await ask(agents[0]!, RIGHT)).toBe(429);
      expect(await ask(agents[12]!, RIGHT)).toBe(200);
    } finally {
      await Promise.all(agents.map((agent) => agent.close()));
      server.close();
    }
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
