import { Hono } from 'hono';
import type { Reload } from '../config/reload.ts';
import { HttpError } from '../errors.ts';

/** `/api/config`: the running config's version, and a reload of the file it came from. */
export function configRoutes({ reload, configVersion }: { reload: Reload | undefined; configVersion: string }): Hono {
  const app = new Hono();
  app.get('/', (c) => c.json({ configVersion, reloadable: reload !== undefined }));
  app.post('/reload', async (c) => {
    if (reload === undefined) {
      throw new HttpError(409, 'not_reloadable', 'this gateway was started without a config file to read again');
    }
    const outcome = await reload();
    if (outcome.reloaded) return c.json(outcome);
    const count = `${outcome.problems.length} problem${outcome.problems.length === 1 ? '' : 's'}`;
    return c.json(
      {
        error: { code: 'invalid_config', message: `the config file has ${count}; the running config (${outcome.configVersion}) stays` },
        problems: outcome.problems,
        configVersion: outcome.configVersion,
      },
      422,
    );
  });
  return app;
}
