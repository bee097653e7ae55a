import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { createAdapter } from '../adapters/index.ts';
import type { Adapter } from '../adapters/types.ts';
import { createApp } from './app.ts';
import type { Config } from './config/schema.ts';
import type { Logger } from './log.ts';
import { createMetrics } from './metrics.ts';
import { openStore, type Store } from './store/connect.ts';
import { migrate } from './store/migrate.ts';

export interface GatewayOptions {
  config: Config;
  logger: Logger;
  port: number;
  host?: string;
  databaseUrl?: string | undefined;
  dataDir?: string | undefined;
}

export interface Gateway {
  readonly url: string;
  readonly store: Store;
  close(): Promise<void>;
}

/** Opens the store, migrates it, and serves. Used by `oncehook serve` and by the tests that run it in-process. */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const { config, logger } = options;
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
  const app = createApp({ config, adapters, store, logger, metrics: createMetrics() });

  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const started = serve({ fetch: app.fetch, port: options.port, hostname: options.host ?? '0.0.0.0' }, () =>
      resolve(started),
    );
    started.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  logger.info(
    { port, database: store.kind, sources: Object.keys(config.sources) },
    `oncehook listening on ${url} (${store.kind === 'pglite' ? `embedded PGlite in ${options.dataDir ?? 'memory'}` : 'PostgreSQL'})`,
  );

  return {
    url,
    store,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        if ('closeIdleConnections' in server) server.closeIdleConnections();
      });
      await store.close();
    },
  };
}
