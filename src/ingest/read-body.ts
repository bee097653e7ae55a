import { HttpError } from '../errors.ts';

/**
 * Reads a request body while enforcing the size limit as the bytes arrive — a chunked body without a
 * Content-Length is cut off at the limit rather than buffered whole — and a read deadline, so a body
 * trickling in (slowloris) cannot hold a connection and its memory open.
 */
export async function readBody(request: Request, maxBytes: number, timeoutMs: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge(maxBytes);
  if (!request.body) return new Uint8Array(0);

  const reader = request.body.getReader();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    reader.cancel().catch(() => {});
  }, timeoutMs);
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (timedOut) throw new HttpError(408, 'body_timeout', `the body did not arrive within ${timeoutMs} ms`);
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        reader.cancel().catch(() => {});
        throw tooLarge(maxBytes);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof HttpError) throw error;
    if (timedOut) throw new HttpError(408, 'body_timeout', `the body did not arrive within ${timeoutMs} ms`);
    throw new HttpError(400, 'body_unreadable', `the body could not be read: ${(error as Error).message}`);
  } finally {
    clearTimeout(timer);
  }
  return Buffer.concat(chunks);
}

function tooLarge(maxBytes: number): HttpError {
  return new HttpError(413, 'body_too_large', `the body is larger than this source's limit of ${maxBytes} bytes`);
}
