/**
 * The gateway a developer would write instead of oncehook, in one process: Hono on the same server adapter
 * receives and queues (app.ts), pg-boss workers forward (worker.ts). The bench sends its spec, then loads it as it
 * loads oncehook.
 */
import { serve } from '@hono/node-server';
import PgBoss from 'pg-boss';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { exitWithParent } from '../children.ts';
import { peerApp } from './app.ts';
import { PEER_QUEUE, type PeerReady, type PeerSpec } from './protocol.ts';
import { startForwarding } from './worker.ts';

const VERSION = (createRequire(import.meta.url)('pg-boss/package.json') as { version: string }).version;

exitWithParent();
process.once('message', (spec: PeerSpec) => {
  start(spec).catch((error: unknown) => {
    console.error(`peer: ${(error as Error).stack ?? String(error)}`);
    process.exit(1);
  });
});

async function start(spec: PeerSpec): Promise<void> {
  const boss = new PgBoss({
    connectionString: spec.databaseUrl,
    max: spec.poolMax,
    application_name: 'bench-peer',
    // Nothing is scheduled and nothing needs maintenance within a run; their timers would only add noise.
    supervise: false,
    schedule: false,
  });
  boss.on('error', (error) => console.error(`peer pg-boss: ${error.message}`));
  await boss.start();
  await boss.createQueue(PEER_QUEUE);
  const closeForwarding = await startForwarding(boss, spec);
  const server = serve({ fetch: peerApp(boss, spec.secret).fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => {
    process.send!({ type: 'ready', port: info.port, version: VERSION } satisfies PeerReady);
  });
  process.once('SIGTERM', () => {
    server.close();
    void boss
      .stop({ graceful: false, wait: true })
      .then(closeForwarding)
      .finally(() => process.exit(0));
  });
}
