/**
 * The HTTP ceiling: the same framework and server adapter as the gateway, reading the same body and
 * answering a small JSON, with nothing in between. Whatever the gateway does beyond this costs the difference.
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import type { AddressInfo } from 'node:net';
import { exitWithParent } from '../children.ts';
import type { Ready } from './protocol.ts';

exitWithParent();
const app = new Hono();
app.post('/in/:source', async (c) => {
  const body = await c.req.arrayBuffer();
  return c.json({ received: body.byteLength, source: c.req.param('source') });
});
app.get('/healthz', (c) => c.json({ ok: true }));

const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => {
  process.send!({ type: 'ready', port: info.port } satisfies Ready);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
