import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';

/**
 * An error that becomes an HTTP answer. It is turned into `{"error":{"code","message"}}` in exactly one
 * place (the app's onError), so every route speaks the same error shape.
 */
export class HttpError extends HTTPException {
  readonly code: string;
  readonly headers: Record<string, string>;

  constructor(status: ContentfulStatusCode, code: string, message: string, headers: Record<string, string> = {}) {
    super(status, { message });
    this.code = code;
    this.headers = headers;
  }

  override getResponse(): Response {
    return new Response(JSON.stringify({ error: { code: this.code, message: this.message } }), {
      status: this.status,
      headers: { 'content-type': 'application/json; charset=utf-8', ...this.headers },
    });
  }
}

/**
 * Which check a delivery failed: its signature did not match (a wrong or rotated secret), its timestamp was outside
 * the window (a replay, a skewed clock), or a header the scheme needs was missing (not the sender it says it is).
 */
export type SignatureCheck = 'signature' | 'timestamp' | 'missing_header';

/** The request's signature or timestamp did not verify: the sender gets 401 and nothing is stored. */
export class SignatureError extends HttpError {
  readonly check: SignatureCheck;

  constructor(message: string, check: SignatureCheck = 'signature') {
    super(401, 'invalid_signature', message);
    this.check = check;
  }
}

/** The request verified but cannot be understood (bad JSON, a missing identity): 400, nothing stored. */
export class InputError extends HttpError {
  constructor(code: string, message: string) {
    super(400, code, message);
  }
}
