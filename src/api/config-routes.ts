import { Hono } from 'hono';
import { z } from 'zod';
import { ConfigError, parseConfig } from '../config/load.ts';
import type { Reload } from '../config/reload.ts';
import type { Config } from '../config/schema.ts';
import { HttpError } from '../errors.ts';
import { readBody } from '../http/input.ts';
import { DEFAULT_TRIED, MOST_TRIED, tryConfig } from '../operate/try-config.ts';
import type { Store } from '../store/connect.ts';

const tryInput = z.strictObject({
  config: z.union([z.string(), z.record(z.string(), z.unknown())]),
  last: z.int().min(1).max(MOST_TRIED).default(DEFAULT_TRIED),
  source: z.string().min(1).optional(),
});

/** A config with problems: every one, each led by its JSON path, beside the version that runs. */
function refused(problems: string[], configVersion: string, running: string) {
  const count = `${problems.length} problem${problems.length === 1 ? '' : 's'}`;
  return { error: { code: 'invalid_config', message: `the config has ${count}; ${running}` }, problems, configVersion };
}

/** `/api/config`: the running config's version, a reload of the file it came from, and a config tried on past deliveries. */
export function configRoutes(deps: { store: Store; config: Config; reload: Reload | undefined; configVersion: string }): Hono {
  const { store, config, reload, configVersion } = deps;
  const app = new Hono();
  app.get('/', (c) => c.json({ configVersion, reloadable: reload !== undefined }));
  app.post('/reload', async (c) => {
    if (reload === undefined) {
      throw new HttpError(409, 'not_reloadable', 'this gateway was started without a config file to read again');
    }
    const outcome = await reload();
    if (outcome.reloaded) return c.json(outcome);
    return c.json(refused(outcome.problems, outcome.configVersion, `the running config (${outcome.configVersion}) stays`), 422);
  });
  // Read with this process's environment, as a reload would read it: the secrets a config names are the gateway's.
  app.post('/try', async (c) => {
    const input = await readBody(c.req.raw, tryInput, '{"config": {…}, "last": 1000, "source": "shop"}');
    let tried: Config;
    try {
      tried = parseConfig(typeof input.config === 'string' ? input.config : JSON.stringify(input.config), 'the tried config').config;
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      return c.json(refused(error.problems, configVersion, 'nothing was tried'), 422);
    }
    return c.json(await tryConfig(store.db, config, tried, { last: input.last, source: input.source }));
  });
  return app;
}
