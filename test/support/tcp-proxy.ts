import net from 'node:net';
import { freshDatabase, type TestDatabase } from './engine.ts';

/**
 * A TCP proxy in front of PostgreSQL that a test can make hang (bytes held, as a stalled network does)
 * or refuse (connections dropped and the port closed, as a database that went down). A real fault on a
 * real connection, which no mock of the driver could reproduce.
 */
export interface FaultyProxy {
  port: number;
  hold(): void;
  /** Holds only what the server sends: it still receives, and commits, but its answers never arrive. */
  holdReplies(): void;
  /**
   * The connections open now go silent for good, both ways, and are never closed: a network path that died
   * without a reset. New connections pass. The returned function finally closes the silent ones. With
   * `repliesOnly`, what the client sends still arrives, and commits; only the server's answers are lost.
   */
  strand(options?: { repliesOnly?: boolean }): () => void;
  release(): void;
  /** Every connection open now is reset (RST), both ways: a network path that broke. New connections pass. */
  cut(): void;
  /** Each chunk, both ways, arrives `ms` late from now on (0: on time again), in order. */
  latency(ms: number): void;
  refuse(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startProxy(targetHost: string, targetPort: number): Promise<FaultyProxy> {
  let held = false;
  let repliesHeld = false;
  const pending: Array<() => void> = [];
  const sockets = new Set<net.Socket>();
  /** Silent sockets, and whether they still carry what the client sends. */
  const stranded = new Map<net.Socket, { repliesOnly: boolean }>();

  let delayMs = 0;

  const forward = (from: net.Socket, to: net.Socket, replies: boolean) => {
    // When the last delayed chunk is due: a later one never overtakes it, whatever the latency is by then.
    let lastDue = 0;
    from.on('data', (chunk) => {
      const silence = stranded.get(from);
      if (silence && (replies || !silence.repliesOnly)) return;
      if (held || (replies && repliesHeld)) return void pending.push(() => to.write(chunk));
      const now = performance.now();
      const due = Math.max(now + delayMs, lastDue);
      if (due <= now) return void to.write(chunk);
      lastDue = due;
      setTimeout(() => to.writable && to.write(chunk), due - now);
    });
    from.on('close', () => to.destroy());
    from.on('error', () => to.destroy());
  };

  const onConnection = (client: net.Socket) => {
    const upstream = net.connect(targetPort, targetHost);
    sockets.add(client).add(upstream);
    client.on('close', () => sockets.delete(client));
    upstream.on('close', () => sockets.delete(upstream));
    forward(client, upstream, false);
    forward(upstream, client, true);
  };

  let server = net.createServer(onConnection);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;

  const closeServer = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });

  return {
    port,
    hold() {
      held = true;
    },
    holdReplies() {
      repliesHeld = true;
    },
    strand({ repliesOnly = false } = {}) {
      const now = [...sockets];
      for (const socket of now) stranded.set(socket, { repliesOnly });
      return () => {
        for (const socket of now) socket.destroy();
      };
    },
    release() {
      held = false;
      repliesHeld = false;
      for (const write of pending.splice(0)) write();
    },
    cut() {
      for (const socket of sockets) socket.resetAndDestroy();
    },
    latency(ms) {
      delayMs = ms;
    },
    refuse: closeServer,
    async restore() {
      server = net.createServer(onConnection);
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    },
    close: closeServer,
  };
}

/** A proxy in front of the PostgreSQL database at `databaseUrl`, and the URL that reaches it through the proxy. */
export async function proxyTo(databaseUrl: string): Promise<{ proxy: FaultyProxy; url: string }> {
  const target = new URL(databaseUrl);
  const proxy = await startProxy(target.hostname, Number(target.port || 5432));
  const viaProxy = new URL(databaseUrl);
  viaProxy.port = String(proxy.port);
  return { proxy, url: viaProxy.toString() };
}

export interface ProxiedDatabase {
  /** The database itself, for reading past the proxy and for dropping. */
  database: TestDatabase;
  /** What a gateway should reach it by: through the proxy on PostgreSQL; on PGlite, the same database. */
  reached: TestDatabase;
  /** Only on PostgreSQL: embedded PGlite has no connection to cut. */
  proxy: FaultyProxy | undefined;
}

/** A fresh database of this project's engine, behind a proxy where it has a server. */
export async function freshProxiedDatabase(): Promise<ProxiedDatabase> {
  const database = await freshDatabase();
  if (!database.url) return { database, reached: database, proxy: undefined };
  const { proxy, url } = await proxyTo(database.url);
  return { database, reached: { url, drop: async () => {} }, proxy };
}
