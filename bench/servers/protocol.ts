/** The first IPC message of a bench server: it listens, on this port. */
export interface Ready {
  type: 'ready';
  port: number;
}

export const isReady = (message: unknown): message is Ready => (message as Ready)?.type === 'ready';

/** Wall-clock milliseconds with sub-millisecond resolution, comparable between processes on one machine. */
export const wallNow = () => performance.timeOrigin + performance.now();

/** The downstream's client-credentials token endpoint (RFC 6749 §4.4), and the token it gives every client. */
export const TOKEN_PATH = '/_bench/oauth/token';
export const BENCH_TOKEN = 'bench-access-token';
