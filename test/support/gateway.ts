import { parseConfig } from '../../src/config/load.ts';
import type { Role } from '../../src/app.ts';
import type { ForwarderOptions } from '../../src/forward/forwarder.ts';
import { startGateway, type Gateway, type GatewayOptions } from '../../src/gateway.ts';
import { createLogger, type Logger } from '../../src/log.ts';
import { freshDatabase, type TestDatabase } from './engine.ts';

export interface TestGateway extends Gateway {
  database: TestDatabase;
}

export interface TestGatewayOptions {
  /** A database to share (several gateways, or a restart); by default a fresh one, dropped on close. */
  database?: TestDatabase;
  role?: Role;
  adminToken?: GatewayOptions['adminToken'];
  forwarder?: Partial<ForwarderOptions>;
  alertRoundMs?: number;
  signatureFlushMs?: number;
  rejectionFlushMs?: number;
  /** Default: silent, or TEST_LOG_LEVEL's. */
  logger?: Logger;
  /** What a reload reads: the config it returns, parsed as a file's would be. */
  reloadConfig?: () => object;
}

/** A real gateway on a real port and a fresh database of this project's engine. */
export async function startTestGateway(config: object, options: TestGatewayOptions = {}): Promise<TestGateway> {
  const db = options.database ?? (await freshDatabase({ migrated: true }));
  const gateway = await startGateway({
    config: parseConfig(JSON.stringify(config), 'test config').config,
    logger: options.logger ?? createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
    port: 0,
    host: '127.0.0.1',
    databaseUrl: db.url,
    memoryImage: db.memoryImage,
    role: options.role,
    adminToken: options.adminToken,
    // Tests wait for events, not for the production poll interval.
    forwarder: { pollMs: 200, ...options.forwarder },
    alertRoundMs: options.alertRoundMs,
    signatureFlushMs: options.signatureFlushMs,
    rejectionFlushMs: options.rejectionFlushMs,
    ...(options.reloadConfig ? { reloadConfig: () => parseConfig(JSON.stringify(options.reloadConfig!()), 'test config').config } : {}),
  });
  return {
    ...gateway,
    database: db,
    async close() {
      await gateway.close();
      if (!options.database) await db.drop();
    },
  };
}
