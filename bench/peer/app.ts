/**
 * The peer's receiving side: the route a developer writes with Hono and pg-boss instead of oncehook. It verifies the
 * signature, then sends one job named by the event, and answers once pg-boss's insert has committed. A retry of an
 * event already queued inserts nothing: pg-boss returns null and the answer says `duplicate`.
 */
import { Hono } from 'hono';
import type PgBoss from 'pg-boss';
import { jobIdOf } from './job-id.ts';
import { PEER_QUEUE } from './protocol.ts';
import { shopifySignatureValid } from './verify.ts';

/** A job's data: the delivery's bytes as text, forwarded as received (jsonb would reorder an object's keys). */
export interface ForwardJob {
  body: string;
}

export function peerApp(boss: PgBoss, secret: string): Hono {
  const app = new Hono();
  app.post('/in/:source', async (c) => {
    const body = new Uint8Array(await c.req.arrayBuffer());
    if (!shopifySignatureValid(body, c.req.header('x-shopify-hmac-sha256'), secret)) return c.json({ error: 'invalid signature' }, 401);
    const eventId = c.req.header('x-shopify-event-id');
    if (!eventId) return c.json({ error: 'no X-Shopify-Event-Id' }, 400);
    const job: ForwardJob = { body: Buffer.from(body).toString('utf8') };
    const id = await boss.send(PEER_QUEUE, job, { id: jobIdOf(c.req.param('source'), eventId) });
    return c.json({ decision: id === null ? 'duplicate' : 'accepted' });
  });
  app.get('/healthz', (c) => c.json({ ok: true }));
  return app;
}
