import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from '../log.ts';
import { periodic } from '../periodic.ts';
import type { Store } from './connect.ts';
import { announce, forget, INSTANCE_BEAT_MS } from './instances.ts';

export interface InstanceBeat {
  /** Says the version now: after a reload, so the others see it at once. */
  now(): Promise<void>;
  /** Stops saying it, and removes this process from the live ones. */
  stop(): Promise<void>;
}

/**
 * This process in the `instances` table, from its first `now()` and every few seconds: how `GET /api/instances` and the dashboard learn which
 * instances run which config. A beat that fails (the database away) is only tried again: the gateway's own outage
 * lines already say the database is away.
 */
export function startInstanceBeat(store: Store, logger: Logger, role: string, version: () => string, everyMs = INSTANCE_BEAT_MS): InstanceBeat {
  const startedAt = new Date();
  const id = `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
  const beat = () => announce(store.db, { id, host: hostname(), pid: process.pid, role, configVersion: version() }, startedAt);
  const beats = periodic(everyMs, beat, (error) => logger.debug({ err: error }, 'this instance could not say it is alive; trying again'));
  return {
    now: () => beats.runOnce(),
    async stop() {
      await beats.stop();
      await forget(store.db, id).catch(() => {});
    },
  };
}
