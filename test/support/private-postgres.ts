import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './free-port.ts';
import { asOwner, clusterDir } from './postgres-tools.ts';

/**
 * A PostgreSQL cluster of one test's own, which it may stop and start at will: the shared one at
 * 127.0.0.1:5432 serves every other test file running in parallel and must never restart.
 */
export interface PrivatePostgres {
  readonly url: string;
  start(): Promise<void>;
  /** A fast shutdown: sessions are ended, as in a restart or a failover. */
  stop(): Promise<void>;
  destroy(): Promise<void>;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dir = await clusterDir('oncehook-pg-');
  const data = join(dir, 'data');
  const port = await freePort();
  await asOwner('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '--no-instructions']);
  // Durability is not what this cluster is for: it is a server to take away and bring back, fast.
  const settings = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off`;
  const cluster: PrivatePostgres = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start: () => asOwner('pg_ctl', ['-D', data, '-o', settings, '-l', join(dir, 'log'), '-w', 'start']),
    stop: () => asOwner('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']),
    async destroy() {
      await cluster.stop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await cluster.start();
  return cluster;
}
