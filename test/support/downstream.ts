import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * What the downstream does with one request. A 2xx records an effect (at once, even when the answer is
 * delayed by `delayMs`: a service that commits, then is slow to say so); `hang` records it and never answers;
 * `reset-after-read` records it and drops the connection; `reset-before-read` drops it unread; `endless-200`
 * records it and answers 200 with a body that never ends, until the client closes the connection.
 */
export type Step =
  | {
      status: number;
      retryAfter?: string;
      json?: unknown;
      location?: string;
      delayMs?: number;
      /** A 2xx makes its effect this long after the request is read (default at once); `delayMs` counts from then. */
      commitAfterMs?: number;
    }
  | 'hang'
  | 'reset-after-read'
  | 'reset-before-read'
  | 'endless-200';

export interface PathScript {
  /** Steps for successive requests; when they run out, every request plays `otherwise`. */
  steps?: Step[];
  /** Default: 201 at once. */
  otherwise?: Step;
  /** Answer a repeated `Idempotency-Key` from the recorded effect, making no second one. */
  honourKey?: boolean;
  /** Steps for `GET {path}/lookup?key=`; when they run out it answers from the effects: 200 or 404. */
  lookup?: Step[];
}

export interface Received {
  method: string;
  /** The scripted path; a lookup (`GET {path}/lookup`) is recorded under its path with method GET. */
  path: string;
  /** The path and query as sent, percent-encoding kept. */
  target: string;
  headers: Record<string, string>;
  body: Buffer;
  /** performance.now() when the request's head arrived. */
  at: number;
}

export interface Effect {
  id: string;
  path: string;
  key: string | undefined;
  body: Buffer;
}

/** A request read and not yet answered: `committed` once its effect was made. */
export interface Open {
  path: string;
  at: number;
  committed: boolean;
}

export interface Downstream {
  readonly url: string;
  /** Requests read and not yet answered (a hang stays open until its connection closes). */
  open(): Open[];
  /**
   * The most requests (to `path`, or to any) ever open at once. Exact, unlike sampling `open()`: the count only
   * rises when a request is read, and it is taken then.
   */
  peakOpen(path?: string): number;
  script(path: string, script: PathScript): void;
  /** Every request, lookups included, in arrival order. */
  requests(path?: string): Received[];
  /** Every effect made, in order. */
  effects(path?: string): Effect[];
  close(): Promise<void>;
}

/** A real HTTP downstream on 127.0.0.1 that counts effects, so tests assert what actually happened. */
export async function startDownstream(): Promise<Downstream> {
  const scripts = new Map<string, Required<PathScript>>();
  const received: Received[] = [];
  const made: Effect[] = [];
  const sockets = new Set<Socket>();
  const opened = new Set<Open>();
  const peaks = new Map<string | undefined, number>();

  const scriptOf = (path: string) => {
    let script = scripts.get(path);
    if (!script) {
      script = { steps: [], honourKey: false, lookup: [], otherwise: { status: 201 } };
      scripts.set(path, script);
    }
    return script;
  };

  const record = (path: string, key: string | undefined, body: Buffer): Effect => {
    const effect = { id: `eff_${made.length + 1}`, path, key, body };
    made.push(effect);
    return effect;
  };

  const play = (step: Step, request: IncomingMessage, response: ServerResponse, effect: () => Effect | undefined) => {
    if (step === 'reset-before-read') return request.socket.destroy();
    if (step === 'reset-after-read') {
      effect();
      return request.socket.destroy();
    }
    if (step === 'hang') {
      effect();
      return;
    }
    if (step === 'endless-200') {
      effect();
      response.writeHead(200, { 'content-type': 'application/json' });
      const more = setInterval(() => response.write(Buffer.alloc(16 * 1024, 0x20)), 5);
      response.on('close', () => clearInterval(more));
      return;
    }
    const answer = () => {
      const created = step.status >= 200 && step.status < 300 ? effect() : undefined;
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (step.retryAfter !== undefined) headers['retry-after'] = step.retryAfter;
      if (step.location !== undefined) headers.location = step.location;
      const body = JSON.stringify(step.json ?? (created ? { id: created.id } : { error: `status ${step.status}` }));
      setTimeout(() => response.writeHead(step.status, headers).end(body), step.delayMs ?? 0);
    };
    // A service's commit goes on whether or not its client is still there.
    if (step.commitAfterMs) setTimeout(answer, step.commitAfterMs);
    else answer();
  };

  const server = createServer((request, response) => {
    const at = performance.now();
    const url = new URL(request.url ?? '/', 'http://downstream');
    const isLookup = request.method === 'GET' && url.pathname.endsWith('/lookup');
    const path = isLookup ? url.pathname.slice(0, -'/lookup'.length) : url.pathname;
    const script = scriptOf(path);
    const steps = isLookup ? script.lookup : script.steps;
    const step = steps.shift();
    if (step === 'reset-before-read') {
      received.push({ method: request.method ?? '', path, target: request.url ?? '/', headers: flat(request), body: Buffer.alloc(0), at });
      return request.socket.destroy();
    }
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const headers = flat(request);
      received.push({ method: request.method ?? '', path, target: request.url ?? '/', headers, body, at });
      const open: Open = { path, at, committed: false };
      opened.add(open);
      const alongside = [...opened].filter((o) => o.path === path).length;
      peaks.set(path, Math.max(peaks.get(path) ?? 0, alongside));
      peaks.set(undefined, Math.max(peaks.get(undefined) ?? 0, opened.size));
      response.on('close', () => opened.delete(open));
      if (isLookup) {
        const found = made.find((e) => e.path === path && e.key === url.searchParams.get('key'));
        return play(step ?? (found ? { status: 200, json: { id: found.id } } : { status: 404 }), request, response, () => found);
      }
      const key = headers['idempotency-key'];
      const earlier = script.honourKey && key !== undefined ? made.find((e) => e.path === path && e.key === key) : undefined;
      if (earlier) return response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: earlier.id, replayed: true }));
      play(step ?? script.otherwise, request, response, () => {
        open.committed = true;
        return record(path, key, body);
      });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    script(path, script) {
      scripts.set(path, {
        steps: [...(script.steps ?? [])],
        honourKey: script.honourKey ?? false,
        lookup: [...(script.lookup ?? [])],
        otherwise: script.otherwise ?? { status: 201 },
      });
    },
    open: () => [...opened],
    peakOpen: (path) => peaks.get(path) ?? 0,
    requests: (path) => received.filter((r) => path === undefined || r.path === path),
    effects: (path) => made.filter((e) => path === undefined || e.path === path),
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function flat(request: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}
