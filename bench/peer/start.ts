import { forkTs, nextMessage, type Child } from '../children.ts';
import type { Cleanup } from '../cleanup.ts';
import type { PeerReady, PeerSpec } from './protocol.ts';

export interface RunningPeer {
  readonly url: string;
  readonly child: Child;
  /** pg-boss's version, for the report. */
  readonly version: string;
  stop(): Promise<void>;
}

const isReady = (message: unknown): message is PeerReady => (message as PeerReady)?.type === 'ready';

/** Starts the Hono + pg-boss peer in its own process, and waits until it listens with its workers running. */
export async function startPeer(spec: PeerSpec, cleanup: Cleanup): Promise<RunningPeer> {
  const child = forkTs('Hono + pg-boss peer', new URL('./main.ts', import.meta.url), cleanup);
  child.process.send(spec);
  const { port, version } = await nextMessage(child, isReady);
  return { url: `http://127.0.0.1:${port}`, child, version, stop: () => child.stop() };
}
