import type { MiddlewareHandler } from 'hono';
import type { RequestIdVariables } from 'hono/request-id';
import type { Logger } from '../log.ts';

/**
 * One line per request, with its request ID (also sent back as `X-Request-Id`), so a person's report of
 * "this page failed" can be found in the logs. People's requests (admin API and dashboard) log at info, with
 * the token label that made them; webhook and probe traffic at debug. Never a body, a query or a header.
 */
export function requestLog(logger: Logger): MiddlewareHandler<{ Variables: RequestIdVariables & { actor?: string } }> {
  return async (c, next) => {
    const started = performance.now();
    await next();
    const path = c.req.path;
    const byPerson = path.startsWith('/api/') || path === '/ui' || path.startsWith('/ui/');
    logger[byPerson ? 'info' : 'debug'](
      {
        requestId: c.get('requestId'),
        method: c.req.method,
        path,
        status: c.res.status,
        ms: Math.round(performance.now() - started),
        actor: c.get('actor'),
      },
      'request',
    );
  };
}
