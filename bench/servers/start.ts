import { forkTs, nextMessage, type Child } from '../children.ts';
import type { Cleanup } from '../cleanup.ts';
import { isReady } from './protocol.ts';

export interface BenchServer {
  readonly origin: string;
  readonly child: Child;
  stop(): Promise<void>;
}

async function start(name: string, file: URL, cleanup: Cleanup): Promise<BenchServer> {
  const child = forkTs(name, file, cleanup);
  const { port } = await nextMessage(child, isReady);
  return { origin: `http://127.0.0.1:${port}`, child, stop: () => child.stop() };
}

/** The bare Hono echo, in its own process. */
export const startEcho = (cleanup: Cleanup) => start('bare Hono echo', new URL('./echo.ts', import.meta.url), cleanup);

export interface DownstreamStats {
  received: number;
  /** Tokens given out, and requests received that carried one. */
  tokens: number;
  authorized: number;
  firstAt: number | null;
  lastAt: number | null;
}

export interface Downstream extends BenchServer {
  /** Requests received so far (control requests not counted), and when the first and the last arrived (wall clock, ms). */
  stats(): Promise<DownstreamStats>;
  /** When (wall clock, ms) the probe with this ID arrived; waits up to 30 s for it. */
  probeArrival(id: string): Promise<number | null>;
}

/** The fast local downstream, in its own process. */
export async function startDownstream(cleanup: Cleanup): Promise<Downstream> {
  const server = await start('downstream', new URL('./downstream.ts', import.meta.url), cleanup);
  const get = async <T>(path: string) => (await (await fetch(`${server.origin}${path}`)).json()) as T;
  return {
    ...server,
    stats: () => get<DownstreamStats>('/_bench/stats'),
    probeArrival: async (id) => (await get<{ at: number | null }>(`/_bench/probe/${encodeURIComponent(id)}`)).at,
  };
}
