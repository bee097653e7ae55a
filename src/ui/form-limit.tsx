import { bodyLimit } from 'hono/body-limit';
import { Problem } from './layout.tsx';

/** A dashboard form is a note and a few short fields: this is several times the largest one can be. */
export const FORM_BYTES = 64 * 1024;

/**
 * Refuses a larger body with 413: unread when its Content-Length says so, else as soon as it passes the limit.
 * Placed after what a stranger must show first (a session, the login nonce), so theirs is not read at all.
 */
export const formLimit = bodyLimit({
  maxSize: FORM_BYTES,
  onError: (c) => c.html(<Problem status={413} message={`This form sent more than ${FORM_BYTES / 1024} KiB; no dashboard form needs that much.`} />, 413),
});
