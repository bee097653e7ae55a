import { Hono } from 'hono';
import { z } from 'zod';
import type { Config } from '../config/schema.ts';
import { HttpError } from '../errors.ts';
import type { AdminEnv } from '../http/auth.ts';
import { note, readBody } from '../http/input.ts';
import { destinations, type DestinationWithUse } from '../operate/destinations.ts';
import { resumeDestination } from '../store/atomic/resume.ts';
import type { Store } from '../store/connect.ts';

/**
 * The origin a person named, as destinations are recorded (`http://127.0.0.1:9090`): a trailing slash, a path,
 * upper-case letters or a scheme's default port name the same one. Without a scheme, it stays as given.
 */
function originOf(named: string): string {
  try {
    const url = new URL(named);
    return /^https?:$/.test(url.protocol) ? url.origin : named;
  } catch {
    return named;
  }
}

/** What `GET /api/destinations` answers, and a resume (its one destination). */
export interface DestinationsAnswer {
  items: DestinationWithUse[];
}

/** `/api/destinations`: the downstream origins, and the way out of a pause after a 401 or 403. */
export function destinationRoutes({ store, config }: { store: Store; config: Config }): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();

  app.get('/', async (c) => c.json({ items: await destinations(store, config, 'with use') } satisfies DestinationsAnswer));

  app.post('/:origin/resume', async (c) => {
    const origin = originOf(c.req.param('origin'));
    const body = await readBody(c.req.raw, z.strictObject({ note }), '{"note": "credentials rotated"}');
    const outcome = await resumeDestination(store.db, { origin, note: body.note, actor: c.get('actor') });
    if (!outcome.done) {
      const listed = await destinations(store, config);
      // A configured origin that never answered a 401, 403, 429 or 503 has no row, and is open all the same.
      if (!outcome.known && !listed.some((d) => d.origin === origin)) {
        const known = listed.map((d) => d.origin).join(', ');
        throw new HttpError(404, 'unknown_destination', `no destination ${origin} is configured or on record; the destinations are: ${known || 'none'}`);
      }
      throw new HttpError(409, 'not_paused', `${origin} is not paused`);
    }
    return c.json({ items: (await destinations(store, config, 'with use')).filter((d) => d.origin === origin) } satisfies DestinationsAnswer);
  });

  return app;
}
