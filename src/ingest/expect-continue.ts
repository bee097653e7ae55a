import type { Server } from 'node:http';

/**
 * A sender asking `Expect: 100-continue` waits for a go-ahead before sending its body. Node gives it at once by
 * default, before any handler runs, so an oversized delivery was answered 413 only while its body was already
 * streaming in, and the sender saw a broken pipe instead of the 413. For `POST /in/…` the go-ahead is left to
 * ingest, which gives it once the delivery is admitted and its declared size is within the source's limit
 * (`readBody`); every other request gets it at once, as before.
 */
export function deferContinueToIngest(server: Server): void {
  server.on('checkContinue', (request, response) => {
    if (!request.url?.startsWith('/in/')) response.writeContinue();
    server.emit('request', request, response);
  });
}
