import { createServer, type AddressInfo } from 'node:net';

/** A port of 127.0.0.1 free right now: for a server a test starts itself, or for an address nothing listens on. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
