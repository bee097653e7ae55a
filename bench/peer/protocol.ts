/** The pg-boss queue the peer sends to and works. */
export const PEER_QUEUE = 'deliveries';

/** How the bench starts the peer: where it stores and forwards, and how its pg-boss is tuned. */
export interface PeerSpec {
  databaseUrl: string;
  /** The downstream's origin; jobs are forwarded to its `/crm`, as oncehook's action is. */
  downstreamOrigin: string;
  secret: string;
  /** pg-boss's pool: one connection per client sending at once, plus the workers' own. */
  poolMax: number;
  batchSize: number;
  workers: number;
  pollingIntervalSeconds: number;
  /** Connections to the downstream, the peer's forwarding concurrency. */
  connections: number;
}

/** The peer's first message: it listens on this port, and runs this pg-boss. */
export interface PeerReady {
  type: 'ready';
  port: number;
  version: string;
}
