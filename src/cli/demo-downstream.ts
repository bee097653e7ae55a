import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { demoCrm, isCrmPath, type CrmOptions } from './demo-crm.ts';

interface Effect {
  id: string;
  path: string;
  at: string;
}

/**
 * A downstream to forward to while trying oncehook (`npm start` with the example config). Every POST makes
 * an effect, except a repeated `Idempotency-Key`, which is answered from the first; `GET …?key=` answers
 * whether an effect with that key exists — the lookup the example's welcome-mail action uses. Each request
 * is printed, so a newcomer sees what oncehook sends. Beside them, under `/crm/contacts`, a small CRM API that
 * wants a token, validates, and limits its rate (demo-crm.ts): one process serves every action a quick start
 * configures, open ones and authenticated ones alike.
 */
export async function startDemoDownstream(options: {
  port: number;
  host: string;
  crm: CrmOptions;
}): Promise<{ url: string; close: () => Promise<void> }> {
  const effects = new Map<string, Effect>();
  const crm = demoCrm(options.crm);
  let count = 0;

  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const url = new URL(request.url ?? '/', 'http://demo');
      if (isCrmPath(url.pathname)) {
        const reply = crm({ method: request.method ?? 'GET', url, headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
        console.log(`${request.method} ${url.pathname}${url.search} ${attempt(request)} → ${reply.status} ${reply.note}`);
        return answer(response, reply.status, reply.body, reply.headers);
      }
      if (request.method === 'GET' && url.searchParams.has('key')) return lookup(url.searchParams.get('key')!, response);
      if (request.method !== 'POST') return answer(response, 405, { error: 'POST to make an effect, GET ?key= to look one up' });
      const key = header(request, 'idempotency-key');
      const earlier = key === undefined ? undefined : effects.get(key);
      print(request, url, chunks, earlier ? `replayed ${earlier.id}` : undefined);
      if (earlier) return answer(response, 200, { ...earlier, replayed: true });
      const effect = { id: `demo_${++count}`, path: url.pathname, at: new Date().toISOString() };
      if (key !== undefined) effects.set(key, effect);
      answer(response, 201, effect, { location: `/effects/${effect.id}` });
    });
  });

  const lookup = (key: string, response: ServerResponse) => {
    const found = effects.get(key);
    console.log(`GET lookup ${key} → ${found ? `found ${found.id}` : 'absent'}`);
    if (found) answer(response, 200, found);
    else answer(response, 404, { error: 'no effect with this key' });
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  const close = () =>
    new Promise<void>((resolve, reject) => {
      server.close((error) => (error ? reject(error) : resolve()));
      server.closeAllConnections();
    });
  return { url: `http://${options.host}:${port}`, close };
}

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function attempt(request: IncomingMessage): string {
  return `task=${header(request, 'oncehook-task-id') ?? '-'} attempt=${header(request, 'oncehook-attempt') ?? '-'}`;
}

function print(request: IncomingMessage, url: URL, chunks: Buffer[], note: string | undefined) {
  const body = Buffer.concat(chunks).toString('utf8');
  console.log(
    `POST ${url.pathname} ${attempt(request)} topic=${header(request, 'oncehook-topic') ?? '-'}${note ? ` (${note})` : ''}` +
      `\n  ${body.length > 200 ? `${body.slice(0, 200)}…` : body}`,
  );
}

function answer(response: ServerResponse, status: number, body: object, headers: Record<string, string> = {}) {
  response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}
