import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { listen } from '../../src/listener.ts';

describe('the listening socket, bound before the database is opened', () => {
  it('answers 503 with Retry-After until the app is handed over, /healthz 200, then the app answers', async () => {
    const listener = await listen(0, '127.0.0.1', 15_000);
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
    const listener = await listen(0, '127.0.0.1', 15_000);
    try {
      // Node's defaults, 60 s and 5 min, checked every 30 s, let a client that never finished hold its connection.
      expect(listener.server.headersTimeout).toBe(10_000);
      expect(listener.server.requestTimeout).toBe(25_000);
    } finally {
      await listener.close();
    }
  });

  it('finds a port in use at once, marked as the listening socket\'s error', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as AddressInfo;
    try {
      await expect(listen(port, '127.0.0.1', 15_000)).rejects.toMatchObject({ code: 'EADDRINUSE', listening: true });
    } finally {
      holder.close();
    }
  });
});
