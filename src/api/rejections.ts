import { Hono } from 'hono';
import { z } from 'zod';
import type { AdminEnv } from '../http/auth.ts';
import { readQuery } from '../http/input.ts';
import { rejectionsReport, rejectionsSince, type RejectionsReport } from '../operate/rejections.ts';
import type { Store } from '../store/connect.ts';

const query = z.strictObject({ source: z.string().min(1).optional(), since: z.string().max(100).optional() });

/** What `GET /api/rejections` answers: refused requests per source and reason, per minute, with a few samples. */
export type RejectionsAnswer = RejectionsReport;

/** `/api/rejections`: the requests ingest refused, counted, never stored one by one. */
export function rejectionRoutes({ store }: { store: Store }): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  app.get('/', async (c) => {
    const { source, since } = readQuery(c, query);
    return c.json((await rejectionsReport(store.db, { source, since: rejectionsSince(since) })) satisfies RejectionsAnswer);
  });
  return app;
}
