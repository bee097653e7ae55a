import net from 'node:net';
import type { Delivery } from './deliveries.ts';

export interface PartialRequest {
  /** Sends the rest of the body. */
  finish(): void;
  /** The raw answer, once its head and body arrived (or whatever came before the connection closed). */
  answer: Promise<string>;
  socket: net.Socket;
}

/**
 * Sends a delivery's head and the first bytes of its body over a socket of its own, and holds the rest until
 * `finish`: a delivery caught mid-read, the way a slow sender's is.
 */
export function partialRequest(baseUrl: string, source: string, delivery: Delivery, sentBytes = 5): PartialRequest {
  const { port } = new URL(baseUrl);
  const socket = net.connect(Number(port), '127.0.0.1');
  const body = Buffer.from(delivery.body);
  const headers = Object.entries(delivery.headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.write(`POST /in/${source} HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n${headers}\r\n`);
  socket.write(body.subarray(0, sentBytes));
  const answer = new Promise<string>((resolve) => {
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk.toString();
      if (/\r\n\r\n[\s\S]*\}$/.test(text)) resolve(text);
    });
    socket.on('close', () => resolve(text));
    socket.on('error', () => resolve(text));
  });
  return { finish: () => socket.write(body.subarray(sentBytes)), answer, socket };
}
