import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { deferContinueToIngest } from './ingest/expect-continue.ts';

export type Answer = (request: Request, env: unknown) => Response | Promise<Response>;

/** As the app's every answer (src/app.ts): these are answered before it, or after it. */
const NO_SNIFF = { 'x-content-type-options': 'nosniff' };

/** A request this instance cannot take now: the sender retries a 503, elsewhere or in a second. */
function turnedAway(code: string, message: string): Response {
  return Response.json({ error: { code, message } }, { status: 503, headers: { 'retry-after': '1', connection: 'close', ...NO_SNIFF } });
}

/**
 * Before the app is ready: nothing is lost, and a request is not held open for what can be seconds (a new data
 * directory's cluster and migrations, crash recovery, a database not there yet). `/healthz` says the process
 * runs, as it does; `/readyz` says what the start waits for. `waitingFor` is the last try's failure, if any.
 */
function starting(request: Request, waitingFor: string | null): Response {
  const { pathname } = new URL(request.url);
  if (pathname === '/healthz') return Response.json({ ok: true, starting: true }, { headers: NO_SNIFF });
  if (pathname === '/readyz') {
    const database = waitingFor === null ? { database: 'opening' } : { database: 'waiting', reason: waitingFor };
    return Response.json({ ok: false, starting: true, ...database }, { status: 503, headers: NO_SNIFF });
  }
  const awaited = waitingFor === null ? 'its database is not open yet' : `waiting for its database (${waitingFor})`;
  return turnedAway('starting', `this instance is starting: ${awaited}; retry`);
}

/** While stopping, a request arriving on a connection still open is turned away. */
export function stopping(): Response {
  return turnedAway('shutting_down', 'this instance is stopping; retry');
}

export interface Listener {
  readonly address: AddressInfo;
  /** Until the app answers: the start is waiting for the database, which failed its last try thus. */
  waitingForDatabase(reason: string): void;
  /** From now on, requests are answered by `answer`. */
  answerWith(answer: Answer): void;
  /** A reloaded config's timings: a request's longest body read, and how long an idle connection is kept. */
  setTimings(timings: ListenerTimings): void;
  /** The underlying server, for a graceful close. */
  readonly server: Server;
  /** Stops listening and drops every connection: for a start that failed. */
  close(): Promise<void>;
}

export interface ListenerTimings {
  /** The longest time any source gives a body to arrive. */
  longestReadMs: number;
  /** How long a connection may sit idle between requests before the gateway closes it. */
  keepAliveMs: number;
}

/** A sender writes its request's head at once; Node's default lets a client take a minute over it. */
const HEADERS_TIMEOUT_MS = 10_000;
/** How often Node looks for requests past those timeouts (its default, 30 s, let one run to 40 s). */
const TIMEOUT_CHECK_MS = 1000;

/**
 * Binds the gateway's port before anything else starts, so a port that is taken (or a --host that names no
 * address) is found at once, not after the database was opened — on a new embedded data directory, about two
 * seconds. Requests arriving meanwhile are answered by `starting` until `answerWith` hands over to the app.
 *
 * A whole request must arrive within its head's timeout plus `longestReadMs`, the longest time any source gives a
 * body (ingest cuts its own bodies sooner, by their rate). Node's default, five minutes, let a client that never
 * finished a request to another route hold its connection that long.
 */
export async function listen(port: number, host: string, timings: ListenerTimings): Promise<Listener> {
  let waitingFor: string | null = null;
  let answer: Answer = (request) => starting(request, waitingFor);
  const serverOptions = {
    headersTimeout: HEADERS_TIMEOUT_MS,
    requestTimeout: HEADERS_TIMEOUT_MS + timings.longestReadMs,
    keepAliveTimeout: timings.keepAliveMs,
    connectionsCheckingInterval: TIMEOUT_CHECK_MS,
  };
  const server = await new Promise<Server>((resolve, reject) => {
    // HTTP/1.1 only: serve() is never given an HTTP/2 server here.
    const fetch = (request: Request, env: unknown) => answer(request, env);
    const started = serve({ fetch, port, hostname: host, serverOptions }, () => resolve(started as Server)) as Server;
    started.once('error', (error) => reject(Object.assign(error, { listening: true })));
    deferContinueToIngest(started);
  });
  return {
    address: server.address() as AddressInfo,
    server,
    waitingForDatabase(reason) {
      waitingFor = reason;
    },
    answerWith(next) {
      answer = next;
    },
    setTimings(next) {
      // Node reads both when it next needs them (its periodic check, a connection going idle): a reload takes
      // effect at once, and a connection idle already keeps the time it was given.
      server.requestTimeout = HEADERS_TIMEOUT_MS + next.longestReadMs;
      server.keepAliveTimeout = next.keepAliveMs;
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
