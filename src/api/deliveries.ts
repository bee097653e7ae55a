import { Hono } from 'hono';
import { z } from 'zod';
import type { Config } from '../config/schema.ts';
import { HttpError } from '../errors.ts';
import type { AdminEnv } from '../http/auth.ts';
import { pageOf, pageQuery, readQuery } from '../http/input.ts';
import { shownBody, type ShownBody } from '../operate/delivery-body.ts';
import { parseMatch } from '../operate/delivery-search.ts';
import { explainDelivery } from '../operate/explain.ts';
import type { Store } from '../store/connect.ts';
import { DECISIONS } from '../store/decisions.ts';
import { deliveryView, listDeliveries, type DeliveryView } from '../store/queries/deliveries.ts';
import { searchDeliveries, type SearchPage } from '../store/queries/delivery-search.ts';

const listQuery = z.strictObject({
  source: z.string().min(1).optional(),
  decision: z.enum(Object.values(DECISIONS) as [string, ...string[]]).optional(),
  eventId: z.string().min(1).optional(),
  deliveryId: z.string().min(1).optional(),
  /** A filter in the actions' syntax, as URL-encoded JSON: the receipts whose content it matches. */
  match: z.string().optional(),
  ...pageQuery('bigint'),
});

/**
 * What `GET /api/deliveries` answers: a page of receipts. With `match`, `partial` says the search stopped at its
 * bound of receipts read before the page was full: more may match after `nextCursor`.
 */
export type DeliveriesAnswer = Awaited<ReturnType<typeof listDeliveries>> & Partial<Pick<SearchPage, 'partial'>>;

/**
 * What `GET /api/deliveries/{id}` answers: the receipt with the body it carried, its decision in words, and the paths
 * of what it names.
 */
export type DeliveryAnswer = DeliveryView & ShownBody & {
  explanation: string;
  links: { self: string; matched: string | null; origin: string | null; tasks: string[] };
};

/** `/api/deliveries`: every verified receipt, and one with its decision explained and linked. */
export function deliveryRoutes({ store, config }: { store: Store; config: Config }): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();

  app.get('/', async (c) => {
    const { match, ...query } = readQuery(c, listQuery);
    if (match === undefined) return c.json((await listDeliveries(store.db, query, pageOf(query))) satisfies DeliveriesAnswer);
    return c.json((await searchDeliveries(store.db, query, parseMatch(match), pageOf(query))) satisfies DeliveriesAnswer);
  });

  app.get('/:id', async (c) => {
    const id = c.req.param('id');
    const view = await deliveryView(store.db, id);
    if (!view) throw new HttpError(404, 'unknown_delivery', `no delivery ${id} (IDs of receipts start with d_; filter by the sender's ID with ?deliveryId=)`);
    return c.json({
      ...view,
      ...(await shownBody(store.db, view.id, config)),
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
