import { Hono } from 'hono';
import { z } from 'zod';
import { HttpError } from '../errors.ts';
import type { AdminEnv } from '../http/auth.ts';
import { pageOf, pageQuery, readQuery } from '../http/input.ts';
import { explainDelivery } from '../operate/explain.ts';
import type { Store } from '../store/connect.ts';
import { DECISIONS } from '../store/decisions.ts';
import { deliveryView, listDeliveries, type DeliveryView } from '../store/queries/deliveries.ts';

const listQuery = z.strictObject({
  source: z.string().min(1).optional(),
  decision: z.enum(Object.values(DECISIONS) as [string, ...string[]]).optional(),
  eventId: z.string().min(1).optional(),
  deliveryId: z.string().min(1).optional(),
  ...pageQuery('bigint'),
});

/** What `GET /api/deliveries` answers: a page of receipts. */
export type DeliveriesAnswer = Awaited<ReturnType<typeof listDeliveries>>;

/** What `GET /api/deliveries/{id}` answers: the receipt, its decision in words, and the paths of what it names. */
export type DeliveryAnswer = DeliveryView & {
  explanation: string;
  links: { self: string; matched: string | null; origin: string | null; tasks: string[] };
};

/** `/api/deliveries`: every verified receipt, and one with its decision explained and linked. */
export function deliveryRoutes({ store }: { store: Store }): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();

  app.get('/', async (c) => {
    const query = readQuery(c, listQuery);
    return c.json(await listDeliveries(store.db, query, pageOf(query)));
  });

  app.get('/:id', async (c) => {
    const id = c.req.param('id');
    const view = await deliveryView(store.db, id);
    if (!view) throw new HttpError(404, 'unknown_delivery', `no delivery ${id} (IDs of receipts start with d_; filter by the sender's ID with ?deliveryId=)`);
    return c.json({
      ...view,
      explanation: explainDelivery(view),
      links: {
        self: `/api/deliveries/${view.id}`,
        matched: view.matched ? `/api/deliveries/${view.matched.id}` : null,
        origin: view.origin ? `/api/deliveries/${view.origin.id}` : null,
        tasks: view.tasks.map((task) => `/api/tasks/${task.id}`),
      },
    } satisfies DeliveryAnswer);
  });

  return app;
}
