import type { MiddlewareHandler } from 'hono';
import { HttpError } from '../errors.ts';
import type { AdminTokens } from './tokens.ts';

/** What the admin routes know about a request: the label of the token it carried. */
export type AdminEnv = { Variables: { actor: string } };

/** `Authorization: Bearer <token>`; the token's label becomes the actor every decision is recorded under. */
export function bearerAuth(tokens: AdminTokens): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    const match = /^Bearer\s+(.+)$/i.exec(c.req.header('authorization') ?? '');
    const label = match ? tokens.labelOf(match[1]!.trim()) : null;
    if (label === null) {
      throw new HttpError(401, 'unauthorized', 'the admin API needs "Authorization: Bearer $ONCEHOOK_ADMIN_TOKEN"', {
        'www-authenticate': 'Bearer realm="oncehook"',
      });
    }
    c.set('actor', label);
    await next();
  };
}
