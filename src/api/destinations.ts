import { Hono } from 'hono';
import { z } from 'zod';
import type { Config } from '../config/schema.ts';
import { HttpError } from '../errors.ts';
import { resumeDestination } from '../store/atomic.ts';
import type { Store } from '../store/connect.ts';
import { listDestinations, type DestinationRow } from '../store/queries/destinations.ts';
import type { AdminEnv } from './auth.ts';
import { note, readBody } from './input.ts';

export interface DestinationView extends Omit<DestinationRow, 'updatedAt'> {
  status: 'open' | 'cooling' | 'paused';
  /** The configured actions that send to it, as `source/action`. */
  actions: string[];
}

/** Every configured destination with its standing; one the database knows but config no longer names is listed too. */
export async function destinations(store: Store, config: Config): Promise<DestinationView[]> {
  const known = new Map((await listDestinations(store.db)).map((row) => [row.origin, row]));
  const actions = new Map<string, string[]>();
  for (const [source, sourceConfig] of Object.entries(config.sources)) {
    for (const [action, actionConfig] of Object.entries(sourceConfig.actions)) {
      const origin = new URL(actionConfig.url).origin;
      actions.set(origin, [...(actions.get(origin) ?? []), `${source}/${action}`]);
    }
  }
  const now = Date.now();
  return [...new Set([...actions.keys(), ...known.keys()])].sort().map((origin) => {
    const row = known.get(origin);
    const status = row?.pausedAt ? 'paused' : row?.cooldownUntil && row.cooldownUntil.getTime() > now ? 'cooling' : 'open';
    return {
      origin,
      status,
      cooldownUntil: row?.cooldownUntil ?? null,
      pausedAt: row?.pausedAt ?? null,
      pausedReason: row?.pausedReason ?? null,
      actions: actions.get(origin) ?? [],
    };
  });
}

/** `/api/destinations`: the downstream origins, and the way out of a pause after a 401 or 403. */
export function destinationRoutes({ store, config }: { store: Store; config: Config }): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();

  app.get('/', async (c) => c.json({ items: await destinations(store, config) }));

  app.post('/:origin/resume', async (c) => {
    const origin = c.req.param('origin');
    const body = await readBody(c.req.raw, z.strictObject({ note }), '{"note": "credentials rotated"}');
    const outcome = await resumeDestination(store.db, { origin, note: body.note, actor: c.get('actor') });
    if (!outcome.done) {
      if (!outcome.known) throw new HttpError(404, 'unknown_destination', `no standing is recorded for ${origin}; it is open (URL-encode the origin, e.g. https%3A%2F%2Fcrm.example)`);
      throw new HttpError(409, 'not_paused', `${origin} is not paused`);
    }
    return c.json({ items: (await destinations(store, config)).filter((d) => d.origin === origin) });
  });

  return app;
}
