import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * JSON logs. Bodies and signatures are never passed to the logger; the redact paths are a second line of
 * defence for a header object that reaches a log call by mistake.
 */
export function createLogger(level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    level,
    base: { service: 'oncehook' },
    redact: {
      paths: ['headers.authorization', 'headers.cookie', '*.secrets', 'secrets', 'token', 'adminToken'],
      censor: '[redacted]',
    },
  });
}
