/** An endless request body that says whether anything read it: for proving a body was refused unread. */
export function watchedBody(): { body: ReadableStream<Uint8Array>; seen: { read: boolean } } {
  const seen = { read: false };
  // No queue to fill: only a reader pulls.
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        seen.read = true;
        controller.enqueue(new Uint8Array(64 * 1024));
      },
    },
    { highWaterMark: 0 },
  );
  return { body, seen };
}

/** `init` for a request with a streamed body (Node's fetch wants `duplex` then; the DOM types lack it). */
export const streaming = (init: RequestInit & { body: ReadableStream<Uint8Array> }): RequestInit => ({ ...init, duplex: 'half' }) as RequestInit;
