import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { HttpError } from '../errors.ts';

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * `Authorization: Bearer <token>`, compared in constant time. Both sides are hashed first so the compare
 * also takes the same time whatever the length of the guess.
 */
export function bearerAuth(token: string): MiddlewareHandler {
  const expected = digest(token);
  return async (c, next) => {
    const match = /^Bearer\s+(.+)$/i.exec(c.req.header('authorization') ?? '');
    if (!match || !timingSafeEqual(digest(match[1]!.trim()), expected)) {
      throw new HttpError(401, 'unauthorized', 'the admin API needs "Authorization: Bearer $ONCEHOOK_ADMIN_TOKEN"', {
        'www-authenticate': 'Bearer realm="oncehook"',
      });
    }
    await next();
  };
}
