import { z } from 'zod';

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** "500ms", "10s", "15m", "24h", "30d" → milliseconds; null when the text is not a duration. */
export function parseDuration(text: string): number | null {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (!match) return null;
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}

/**
 * The longest duration the config takes. Past it PostgreSQL's timestamps run out (a retention of "3650000d"
 * failed every purge with "timestamp out of range"), and nothing sensible is kept longer.
 */
const LONGEST_MS = 36_500 * UNIT_MS.d;

/** A duration written as text in the config, read as milliseconds. */
export const duration = z
  .string()
  .regex(/^\d+(ms|s|m|h|d)$/, 'a duration like "500ms", "10s", "15m", "24h" or "30d"')
  .transform((text) => parseDuration(text) as number)
  .refine((ms) => ms <= LONGEST_MS, 'at most 100 years ("36500d")');
