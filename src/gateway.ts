import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { createAdapter } from '../adapters/index.ts';
import type { Adapter } from '../adapters/types.ts';
import { createApp, type Role } from './app.ts';
import type { Config } from './config/schema.ts';
import type { Logger } from './log.ts';
import { Forwarder, type ForwarderOptions } from './forward/forwarder.ts';
import { createMetrics } from './metrics.ts';
import { startPurger, type Purger, type PurgerOptions } from './retention/purger.ts';
import { openStore, type Store } from './store/connect.ts';
import { migrate } from './store/migrate.ts';

export interface GatewayOptions {
  config: Config;
  logger: Logger;
  port: number;
  host?: string;
  databaseUrl?: string | undefined;
  dataDir?: string | undefined;
  /** `web` receives, `worker` forwards, `all` (the default) does both in one process. */
  role?: Role;
  adminToken?: string | undefined;
  forwarder?: Partial<ForwarderOptions>;
  retention?: PurgerOptions;
}

export interface Gateway {
  readonly url: string;
  readonly store: Store;
  close(): Promise<void>;
}

/** Opens the store, migrates it, and serves. Used by `oncehook serve` and by the tests that run it in-process. */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const { config, logger } = options;
  const role = options.role ?? 'all';
  const store = await openStore({ databaseUrl: options.databaseUrl, dataDir: options.dataDir });
  try {
    await migrate(store, options.databaseUrl);
  } catch (error) {
    await store.close();
    throw error;
  }
  const adapters = new Map<string, Adapter>(
    Object.entries(config.sources).map(([id, source]) => [id, createAdapter(source)]),
  );
  const metrics = createMetrics();
  const app = createApp({ config, adapters, store, logger, metrics, role, adminToken: options.adminToken });

  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const started = serve({ fetch: app.fetch, port: options.port, hostname: options.host ?? '0.0.0.0' }, () =>
      resolve(started),
    );
    started.once('error', reject);
  });
  let forwarder: Forwarder | null = null;
  let purger: Purger | null = null;
  try {
    forwarder = role === 'web' ? null : new Forwarder({ config, store, logger, metrics }, options.forwarder);
    await forwarder?.start();
    purger = role === 'web' ? null : startPurger(config, store, logger, options.retention);
  } catch (error) {
    server.close();
    await store.close();
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  if (role !== 'worker' && !options.adminToken) logger.warn('the admin API is off: set ONCEHOOK_ADMIN_TOKEN to turn it on');
  logger.info(
    { port, role, database: store.kind, sources: Object.keys(config.sources) },
    `oncehook listening on ${url} (${store.kind === 'pglite' ? `embedded PGlite in ${options.dataDir ?? 'memory'}` : 'PostgreSQL'})`,
  );

  return {
    url,
    store,
    async close() {
      await purger?.stop();
      await forwarder?.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        if ('closeIdleConnections' in server) server.closeIdleConnections();
      });
      await store.close();
    },
  };
}
