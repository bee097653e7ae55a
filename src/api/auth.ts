import type { MiddlewareHandler } from 'hono';
import { HttpError } from '../errors.ts';
import { clientAddress, type SignInThrottle } from './sign-in-throttle.ts';
import type { AdminTokens } from './tokens.ts';

/** What the admin routes know about a request: the label of the token it carried. */
export type AdminEnv = { Variables: { actor: string } };

const unauthorized = () =>
  new HttpError(401, 'unauthorized', 'the admin API needs "Authorization: Bearer $ONCEHOOK_ADMIN_TOKEN"', {
    'www-authenticate': 'Bearer realm="oncehook"',
  });

/** The answer while wrong tokens have used up their budget: nothing was judged, so it says nothing of the token. */
export const tooManyFailures = (seconds: number) =>
  new HttpError(429, 'too_many_failed_sign_ins', `too many wrong admin tokens from this address (or from everywhere): try again in ${seconds} s`, {
    'retry-after': String(seconds),
  });

/**
 * `Authorization: Bearer <token>`; the token's label becomes the actor every decision is recorded under. Wrong
 * tokens are counted by the throttle; a request without one is not a guess, and is not.
 */
export function bearerAuth(tokens: AdminTokens, throttle: SignInThrottle): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    const match = /^Bearer\s+(.+)$/i.exec(c.req.header('authorization') ?? '');
    if (!match) throw unauthorized();
    const judged = throttle.judge(clientAddress(c), c.req.path, () => tokens.labelOf(match[1]!.trim()));
    if ('retryAfterSeconds' in judged) throw tooManyFailures(judged.retryAfterSeconds);
    if ('wrong' in judged) throw unauthorized();
    c.set('actor', judged.label);
    await next();
  };
}
