/**
 * The fast local downstream both forwarders send to: plain node:http, so it is never the slower side.
 * It counts what arrives and notes when a probe (a body carrying `"probe":"<id>"`) arrived, for the
 * idle first-forward latency. It gives out OAuth 2.0 tokens too, and counts the requests that carried one.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exitWithParent } from '../children.ts';
import { BENCH_TOKEN, TOKEN_PATH, wallNow, type Ready } from './protocol.ts';

const PROBE = Buffer.from('"probe":"');
let received = 0;
let tokens = 0;
let authorized = 0;
let firstAt: number | null = null;
let lastAt: number | null = null;
const probes = new Map<string, number>();
const waiting = new Map<string, (at: number) => void>();

function noteProbe(body: Buffer, at: number): void {
  const start = body.indexOf(PROBE);
  if (start < 0) return;
  const from = start + PROBE.length;
  const id = body.subarray(from, body.indexOf(0x22, from)).toString();
  probes.set(id, at);
  waiting.get(id)?.(at);
  waiting.delete(id);
}

exitWithParent();
const server = createServer((request, response) => {
  const control = request.url?.startsWith('/_bench/');
  if (control && request.url === '/_bench/stats') {
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ received, firstAt, lastAt, tokens, authorized }));
    return;
  }
  if (control && request.url === TOKEN_PATH) {
    tokens++;
    request.resume().on('end', () =>
      response
        .writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' })
        .end(JSON.stringify({ access_token: BENCH_TOKEN, token_type: 'Bearer', expires_in: 3600 })),
    );
    return;
  }
  if (control && request.url!.startsWith('/_bench/probe/')) {
    const id = decodeURIComponent(request.url!.slice('/_bench/probe/'.length));
    const answer = (at: number | null) =>
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ at }));
    const at = probes.get(id);
    if (at !== undefined) return answer(at);
    const timer = setTimeout(() => {
      waiting.delete(id);
      answer(null);
    }, 30_000);
    waiting.set(id, (arrived) => {
      clearTimeout(timer);
      answer(arrived);
    });
    return;
  }
  const at = wallNow();
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    received++;
    if (request.headers.authorization === `Bearer ${BENCH_TOKEN}`) authorized++;
    firstAt ??= at;
    lastAt = at;
    noteProbe(Buffer.concat(chunks), at);
    response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.send!({ type: 'ready', port: (server.address() as AddressInfo).port } satisfies Ready);
});
process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
