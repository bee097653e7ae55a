import { connect, createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { listen } from '../../src/listener.ts';

const TIMINGS = { longestReadMs: 15_000, keepAliveMs: 5000 };

/**
 * A raw connection that has had one request answered and then sits idle: `idleFor` says whether the server closed
 * it meanwhile (a load balancer that reused it would have had its request dropped), and whether a second request
 * on it is answered.
 */
async function answeredConnection(port: number) {
  const socket = connect(port, '127.0.0.1');
  let received = '';
  let closed = false;
  socket.on('data', (chunk) => (received += chunk.toString()));
  socket.on('close', () => (closed = true));
  socket.on('error', () => {});
  const ask = () => socket.write('GET /healthz HTTP/1.1\r\nHost: gateway\r\n\r\n');
  const answers = () => received.split('HTTP/1.1 200').length - 1;
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  ask();
  while (answers() < 1) await sleep(10);
  return {
    async idleFor(ms: number) {
      await sleep(ms);
      const closedWhileIdle = closed;
      if (!closed) ask();
      const until = Date.now() + 2000;
      while (!closed && answers() < 2 && Date.now() < until) await sleep(10);
      socket.destroy();
      return { closedWhileIdle, secondAnswered: answers() === 2 };
    },
  };
}

describe('the listening socket, bound before the database is opened', () => {
  it('answers 503 with Retry-After until the app is handed over, /healthz 200, then the app answers', async () => {
    const listener = await listen(0, '127.0.0.1', TIMINGS);
    const url = `http://127.0.0.1:${listener.address.port}`;
    try {
      const early = await fetch(`${url}/in/shop`, { method: 'POST', body: '{}' });
      expect(early.status).toBe(503);
      expect(early.headers.get('retry-after')).toBe('1');
      expect((await early.json()).error.code).toBe('starting');
      expect(early.headers.get('x-content-type-options')).toBe('nosniff');
      expect((await fetch(`${url}/readyz`)).status).toBe(503);
      expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ ok: true, starting: true });

      listener.answerWith(() => new Response('the app'));
      const ready = await fetch(`${url}/in/shop`, { method: 'POST', body: '{}' });
      expect([ready.status, await ready.text()]).toEqual([200, 'the app']);
    } finally {
      await listener.close();
    }
  });

  it("gives a request's head 10 s, and the whole request that plus the longest time a source gives a body", async () => {
    const listener = await listen(0, '127.0.0.1', TIMINGS);
    try {
      // Node's defaults, 60 s and 5 min, checked every 30 s, let a client that never finished hold its connection.
      expect(listener.server.headersTimeout).toBe(10_000);
      expect(listener.server.requestTimeout).toBe(25_000);
    } finally {
      await listener.close();
    }
  });

  it('keeps an idle connection for keepAliveMs; a reload changes it for connections that go idle after it', async () => {
    const listener = await listen(0, '127.0.0.1', { longestReadMs: 15_000, keepAliveMs: 1000 });
    listener.answerWith(() => new Response('ok'));
    const { port } = listener.address;
    try {
      expect(listener.server.keepAliveTimeout).toBe(1000);
      const before = await answeredConnection(port);
      listener.setTimings({ longestReadMs: 15_000, keepAliveMs: 4000 });
      const after = await answeredConnection(port);
      // Node keeps an idle connection a second past the timeout it advertises, so 1 s means closed by 2 s.
      const [idleBefore, idleAfter] = await Promise.all([before.idleFor(2500), after.idleFor(2500)]);
      expect(idleBefore).toEqual({ closedWhileIdle: true, secondAnswered: false });
      expect(idleAfter).toEqual({ closedWhileIdle: false, secondAnswered: true });
    } finally {
      await listener.close();
    }
  });

  it('finds a port in use at once, marked as the listening socket\'s error', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as AddressInfo;
    try {
      await expect(listen(port, '127.0.0.1', TIMINGS)).rejects.toMatchObject({ code: 'EADDRINUSE', listening: true });
    } finally {
      holder.close();
    }
  });
});
