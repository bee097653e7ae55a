import { parseConfig } from '../../src/config/load.ts';
import { startGateway, type Gateway } from '../../src/gateway.ts';
import { createLogger } from '../../src/log.ts';
import { freshDatabase, type TestDatabase } from './engine.ts';

export interface TestGateway extends Gateway {
  database: TestDatabase;
}

export interface TestGatewayOptions {
  /** A database the caller owns (and drops); by default a fresh one is made and dropped on close. */
  database?: TestDatabase;
}

/** A real gateway on a real port and a fresh database of this project's engine. */
export async function startTestGateway(config: object, options: TestGatewayOptions = {}): Promise<TestGateway> {
  const { database } = options;
  const db = database ?? (await freshDatabase());
  const gateway = await startGateway({
    config: parseConfig(JSON.stringify(config), 'test config').config,
    logger: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
    port: 0,
    host: '127.0.0.1',
    databaseUrl: db.url,
  });
  return {
    ...gateway,
    database: db,
    async close() {
      await gateway.close();
      if (!database) await db.drop();
    },
  };
}
