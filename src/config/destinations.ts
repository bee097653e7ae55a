import { z } from 'zod';

/** The limits one downstream origin is held to, across every worker of every instance on the database. */
export const destinationSchema = z
  .strictObject({
    rateLimit: z
      .strictObject({
        perSecond: z.number().positive().describe('requests a second, sends and lookups together'),
        burst: z.int().positive().optional().describe('requests at once after a quiet spell; default: one second of perSecond'),
      })
      .optional(),
    maxInFlight: z.int().positive().optional().describe('requests waiting for their answer at once'),
  })
  .refine((d) => d.rateLimit !== undefined || d.maxInFlight !== undefined, { message: 'set rateLimit, maxInFlight or both: an entry with neither limits nothing' });

export interface DestinationLimit {
  origin: string;
  perSecond: number | null;
  burst: number | null;
  maxInFlight: number | null;
}

/** What is wrong with a `destinations` key: it must be written as an origin, the way a URL's origin reads. */
export function originProblem(key: string): string | null {
  let url: URL;
  try {
    url = new URL(key);
  } catch {
    return 'not an origin: write it as "https://api.example.com" (scheme, host and port if not the default)';
  }
  if (!/^https?:$/.test(url.protocol)) return 'not an http(s) origin';
  if (url.origin !== key) return `not an origin: write it as "${url.origin}" (no path, no trailing slash, lower-case host, no default port)`;
  return null;
}

export function limitOf(origin: string, d: z.output<typeof destinationSchema>): DestinationLimit {
  return {
    origin,
    perSecond: d.rateLimit?.perSecond ?? null,
    // One second of the rate, and at least one request, which a rate under one a second would otherwise never allow.
    burst: d.rateLimit ? (d.rateLimit.burst ?? Math.max(1, Math.floor(d.rateLimit.perSecond))) : null,
    maxInFlight: d.maxInFlight ?? null,
  };
}
