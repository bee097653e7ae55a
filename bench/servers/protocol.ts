/** The first IPC message of a bench server: it listens, on this port. */
export interface Ready {
  type: 'ready';
  port: number;
}

export const isReady = (message: unknown): message is Ready => (message as Ready)?.type === 'ready';

/** Wall-clock milliseconds with sub-millisecond resolution, comparable between processes on one machine. */
export const wallNow = () => performance.timeOrigin + performance.now();
