import type { MiddlewareHandler } from 'hono';
import { HttpError } from '../errors.ts';
import { clientAddress, type SignInThrottle } from './sign-in-throttle.ts';
import type { AdminTokens } from './tokens.ts';

/** What the admin routes know about a request: the label of the token it carried. */
export type AdminEnv = { Variables: { actor: string } };

/** No token came: the answer says what to send. */
const noToken = () =>
  new HttpError(401, 'unauthorized', 'the admin API needs "Authorization: Bearer $ONCEHOOK_ADMIN_TOKEN"', {
    'www-authenticate': 'Bearer realm="oncehook"',
  });

/**
 * A token came and is none of the admin tokens. Told apart from no token, so a person looks at the token rather
 * than at the header; nothing in it depends on the token presented or the ones configured, so a guess learns only
 * that it was wrong. The challenge carries RFC 6750's `invalid_token`.
 */
const refusedToken = () =>
  new HttpError(401, 'token_refused', "the bearer token was refused: it matches none of this gateway's admin tokens", {
    'www-authenticate': 'Bearer realm="oncehook", error="invalid_token"',
  });

/** The answer while wrong tokens have used up their budget: nothing was judged, so it says nothing of the token. */
export const tooManyFailures = (seconds: number) =>
  new HttpError(429, 'too_many_failed_sign_ins', `too many wrong admin tokens from this address: try again in ${seconds} s`, {
    'retry-after': String(seconds),
  });

/** What a request that would change something is answered with a token that can only look. */
export const readOnlyRefusal = (label: string) =>
  new HttpError(403, 'read_only_token', `the token "${label}" is read-only: it can look at everything and decide nothing; decide with a token given without ":read"`);

/** Methods that change nothing: all a read-only token may use. */
export const READING = new Set(['GET', 'HEAD']);

/**
 * `Authorization: Bearer <token>`; the token's label becomes the actor every decision is recorded under. Wrong
 * tokens are counted by the throttle; a request without one is not a guess, and is not. A read-only token's
 * request to change something is refused here, before its body is read — every such route at once, a new one too.
 */
export function bearerAuth(tokens: AdminTokens, throttle: SignInThrottle): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    const match = /^Bearer\s+(.+)$/i.exec(c.req.header('authorization') ?? '');
    if (!match) throw noToken();
    const judged = throttle.judge(clientAddress(c), c.req.path, () => tokens.labelOf(match[1]!.trim()));
    if ('retryAfterSeconds' in judged) throw tooManyFailures(judged.retryAfterSeconds);
    if ('wrong' in judged) throw refusedToken();
    if (!READING.has(c.req.method) && tokens.readOnly(judged.label)) throw readOnlyRefusal(judged.label);
    c.set('actor', judged.label);
    await next();
  };
}
