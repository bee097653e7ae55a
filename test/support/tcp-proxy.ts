import net from 'node:net';

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

  const forward = (from: net.Socket, to: net.Socket, replies: boolean) => {
    from.on('data', (chunk) => {
      const silence = stranded.get(from);
      if (silence && (replies || !silence.repliesOnly)) return;
      if (held || (replies && repliesHeld)) pending.push(() => to.write(chunk));
      else to.write(chunk);
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
    refuse: closeServer,
    async restore() {
      server = net.createServer(onConnection);
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    },
    close: closeServer,
  };
}
