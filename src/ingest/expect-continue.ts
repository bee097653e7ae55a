import type { IncomingMessage, Server } from 'node:http';

/** Requests to `POST /in/…` whose sender waits for a go-ahead that ingest has not given yet. */
const waiting = new WeakSet<IncomingMessage>();

/**
 * A sender asking `Expect: 100-continue` waits for a go-ahead before sending its body. Node gives it at once by
 * default, before any handler runs, so an oversized delivery was answered 413 only while its body was already
 * streaming in, and the sender saw a broken pipe instead of the 413. For `/in/…` the go-ahead is left to
 * ingest, which gives it once the delivery is admitted and its declared size is within the source's limit
 * (`readBody`); every other request gets it at once, as before. Node decides which requests expect it (HTTP/1.1,
 * the `100-continue` token anywhere in the header), so exactly those are answered.
 */
export function deferContinueToIngest(server: Server): void {
  server.on('checkContinue', (request, response) => {
    if (request.url?.startsWith('/in/')) waiting.add(request);
    else response.writeContinue();
    server.emit('request', request, response);
  });
}

/** True once for a request whose sender still waits for the go-ahead. */
export function takeContinue(request: IncomingMessage): boolean {
  return waiting.delete(request);
}
