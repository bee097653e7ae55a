import { createHash } from 'node:crypto';
import { secretValues } from './mask.ts';
import type { Config } from './schema.ts';

const SECRET = '[secret]';

/**
 * The effective config's version: a hash that two instances share exactly when they run the same config. Secrets
 * are left out (a rotation is not a change of behaviour, and a hash of a short secret beside a known config could be
 * searched back to it); every other value counts, defaults included, and the order keys are written in does not.
 */
export function configVersion(config: Config): string {
  const secrets = new Set(secretValues(config).filter((value) => value !== ''));
  const canonical = (value: unknown): unknown => {
    if (typeof value === 'string') return secrets.has(value) ? SECRET : withoutSecrets(value, secrets);
    if (Array.isArray(value)) return value.map(canonical);
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(
        Object.keys(value)
          .sort()
          .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
      );
    }
    return value;
  };
  return createHash('sha256').update(JSON.stringify(canonical(config))).digest('hex').slice(0, 12);
}

/** A value that holds a secret inside it (a URL with a key in its query, `Bearer <token>`), the secret replaced. */
function withoutSecrets(value: string, secrets: ReadonlySet<string>): string {
  let text = value;
  for (const secret of secrets) if (text.includes(secret)) text = text.split(secret).join(SECRET);
  return text;
}
