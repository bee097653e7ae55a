import type { Dispatcher } from 'undici';
import type { Answer } from './reference.ts';

/** One HTTP request to a downstream. */
export interface Outgoing {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH';
  /** The URL's origin, and its path with its query. */
  origin: string;
  path: string;
  headers: Record<string, string>;
  body: Uint8Array | null;
  /** The whole exchange: connecting, writing, and the answer's status line. */
  timeoutMs: number;
}

/**
 * How an exchange ended. `written` is the line between "nothing happened" and "the effect may exist":
 * false only when the request never reached an open connection (refused, DNS, TLS, connect timeout).
 */
export type Exchange =
  | { kind: 'answer'; answer: Answer }
  | { kind: 'failure'; written: boolean; timedOut: boolean; error: Error };

/** Enough of an answer for a JSON-pointer reference or an error message; the rest is not kept. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * Sends one request through undici's dispatcher API rather than `request()`, because only the handler sees
 * `onRequestStart`: undici calls it once the connection is open and just before it writes the request. An
 * error before it means the downstream never received a byte; after it, the request may have been read.
 * (No client can know whether a server that reset the connection read the bytes first, so that stays unknown.)
 * `release` (a shutdown past its deadline) cuts the exchange short the way the timeout does, and keeps the
 * same line: a request not yet written is never written, one already written ends as a failure after writing.
 */
export function exchange(dispatcher: Dispatcher, out: Outgoing, release?: AbortSignal): Promise<Exchange> {
  return new Promise((resolve) => {
    let controller: Dispatcher.DispatchController | undefined;
    let written = false;
    let timedOut = false;
    /** Why the exchange was cut short; once set, a request not yet written is aborted before its first byte. */
    let cut: Error | undefined;
    let answer: Answer | undefined;
    const chunks: Buffer[] = [];
    let kept = 0;

    const answered = (): Exchange => ({ kind: 'answer', answer: { ...answer!, body: Buffer.concat(chunks) } });
    let settled = false;
    const settle = (result: Exchange) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      release?.removeEventListener('abort', onRelease);
      resolve(result);
    };
    /** The status line decided; the rest of the body is not read, and its connection is closed, not held. */
    const answeredEnough = (error: Error) => {
      settle(answered());
      controller?.abort(error);
    };
    const cutShort = (error: Error) => {
      cut = error;
      // The status line decides the outcome; a body still trickling in changes nothing.
      if (answer) answeredEnough(error);
      else if (controller) controller.abort(error);
      // Still connecting: onRequestStart will abort before writing, so nothing can reach the downstream.
      else settle({ kind: 'failure', written: false, timedOut, error });
    };

    const timer = setTimeout(() => {
      timedOut = true;
      cutShort(new Error(`no answer within ${out.timeoutMs} ms`));
    }, out.timeoutMs);
    const onRelease = () => cutShort(new Error('oncehook stopped before the answer came'));
    if (release?.aborted) onRelease();
    else release?.addEventListener('abort', onRelease, { once: true });

    dispatcher.dispatch(
      {
        origin: out.origin,
        path: out.path,
        method: out.method,
        headers: out.headers,
        body: out.body === null ? null : Buffer.from(out.body.buffer, out.body.byteOffset, out.body.byteLength),
        // Our own timer decides; undici's are only a backstop for a socket left open after we settled.
        headersTimeout: out.timeoutMs + 1000,
        bodyTimeout: out.timeoutMs + 1000,
      },
      {
        onRequestStart(started) {
          if (cut) return started.abort(cut);
          controller = started;
          written = true;
        },
        onResponseStart(_, statusCode, headers, statusMessage) {
          answer = { status: statusCode, statusText: statusMessage ?? '', headers: flatten(headers), body: Buffer.alloc(0) };
        },
        onResponseData(_, chunk) {
          if (kept >= MAX_ANSWER_BYTES) return;
          chunks.push(chunk.subarray(0, MAX_ANSWER_BYTES - kept));
          kept += chunk.byteLength;
          // A body that never ends would otherwise hold its connection, and a slot of the destination's pool,
          // for as long as it streams: undici's body timeout only counts silence.
          if (kept >= MAX_ANSWER_BYTES) answeredEnough(new Error(`the answer passed ${MAX_ANSWER_BYTES} bytes; the rest was not read`));
        },
        onResponseEnd() {
          settle(answered());
        },
        onResponseError(_, error) {
          settle(answer ? answered() : { kind: 'failure', written, timedOut, error });
        },
      },
    );
  });
}

function flatten(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}
